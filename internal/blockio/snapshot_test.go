package blockio

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRecord(t *testing.T) {
	t.Parallel()
	k := blockioKey{Tgid: 42, Dir: 1, Major: 254, Minor: 0, Cgroup: 7}
	v := blockioStat{Requests: 3, Bytes: 12288}
	v.DeviceUs[6] = 3
	v.QueueUs[1] = 3
	for i, c := range "fio" {
		v.Comm[i] = int8(c)
	}
	want := Record{
		Key:  Key{PID: 42, Cgroup: 7, Dev: Dev{Major: 254}, Dir: Write},
		Comm: "fio", Requests: 3, Bytes: 12288,
		Device: Histogram{6: 3}, Queue: Histogram{1: 3},
	}
	if diff := cmp.Diff(want, record(&k, &v)); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	k.Dir = 9 // a direction this package does not know
	if got := record(&k, &v).Dir; got != Other {
		t.Errorf("unknown direction decoded as %v, want other", got)
	}
	for i := range v.Comm {
		v.Comm[i] = 'x'
	}
	if got := record(&k, &v).Comm; got != "xxxxxxxxxxxxxxxx" {
		t.Errorf("a name without NUL decoded as %q", got)
	}
}

func TestSnapshotSubTotal(t *testing.T) {
	t.Parallel()
	vda := Dev{Major: 254}
	fioRead := Key{PID: 10, Cgroup: 1, Dev: vda, Dir: Read}
	fioWrite := Key{PID: 10, Cgroup: 1, Dev: vda, Dir: Write}
	etcd := Key{PID: 20, Cgroup: 2, Dev: vda, Dir: Write}
	prev := Snapshot{
		Records: []Record{
			{Key: fioRead, Comm: "fio", Requests: 10, Bytes: 40960, Device: Histogram{6: 10}},
			{Key: etcd, Comm: "etcd", Requests: 5, Bytes: 20480, Device: Histogram{9: 5}},
		},
		Unmatched: 2,
	}
	now := Snapshot{
		Records: []Record{
			{Key: fioRead, Comm: "fio", Requests: 15, Bytes: 61440, Device: Histogram{6: 14, 7: 1}},
			{Key: fioWrite, Comm: "fio", Requests: 1, Bytes: 4096, Device: Histogram{8: 1}},
			{Key: etcd, Comm: "etcd", Requests: 5, Bytes: 20480, Device: Histogram{9: 5}},
		},
		Unmatched: 3,
		Dropped:   1,
	}
	d := now.Sub(prev)
	want := Snapshot{
		Records: []Record{
			{Key: fioRead, Comm: "fio", Requests: 5, Bytes: 20480, Device: Histogram{6: 4, 7: 1}},
			{Key: fioWrite, Comm: "fio", Requests: 1, Bytes: 4096, Device: Histogram{8: 1}},
		},
		Unmatched: 1,
		Dropped:   1,
	}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("Sub (-want +got):\n%s", diff)
	}

	fio := d.Total(func(k Key) bool { return k.PID == 10 })
	wantFio := Record{
		Key:  Key{PID: 10, Cgroup: 1, Dev: vda}, // the directions differ: zero
		Comm: "fio", Requests: 6, Bytes: 24576, Device: Histogram{6: 4, 7: 1, 8: 1},
	}
	if diff := cmp.Diff(wantFio, fio); diff != "" {
		t.Errorf("Total of PID 10 (-want +got):\n%s", diff)
	}
	all := now.Total(nil)
	if all.Requests != 21 || all.Comm != "" || all.Key != (Key{Dev: vda}) {
		t.Errorf("Total of all: %+v", all)
	}
	if none := now.Total(func(Key) bool { return false }); none.Requests != 0 || none.Key != (Key{}) {
		t.Errorf("Total of none: %+v", none)
	}
}
