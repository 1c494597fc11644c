package kernel

import (
	"testing"
)

// The fixture's diskstats, net/dev, meminfo and vmstat were captured from the machine in testdata/README.md.
func TestResourcesFromFixture(t *testing.T) {
	r, err := NewResourceReader("testdata/root/proc", "testdata/root/sys")
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	// vda (a virtio disk the kernel calls rotational) is the only whole, used, non-loop device; zram0 was never used and loop0 is a loop device.
	if len(res.Disks) != 1 || res.Disks[0].Name != "vda" {
		t.Fatalf("disks = %+v, want vda alone", res.Disks)
	}
	d := res.Disks[0]
	if d.ReadIOs != 1233982 || d.WriteIOs != 246536 || d.WriteSectors != 44121424 || d.IOTicksMs != 161060 || d.WeightedMs != 1795060 || d.FlushIOs != 39836 || !d.Rotational {
		t.Errorf("vda = %+v", d)
	}
	if len(res.Net) != 3 || res.Net[0].Name != "eth0" || res.Net[0].RxBytes != 423354641 || res.Net[0].TxPackets != 24088 || res.Net[0].SpeedMbps != -1 {
		t.Errorf("net = %+v, want eth0, ifb0, ifb1 (no lo), eth0 speed unknown", res.Net)
	}
	// The fixture's meminfo: MemTotal 24684096 kB, MemAvailable 24167332 kB.
	if res.MemTotal != 24684096<<10 || res.MemAvailable != 24167332<<10 {
		t.Errorf("memory total %d available %d, want 24684096 kB and 24167332 kB", res.MemTotal, res.MemAvailable)
	}
	if res.VM.PgMajFault != 64710 {
		t.Errorf("vmstat = %+v", res.VM)
	}
}

func TestResourcesMissingFilesAreNamed(t *testing.T) {
	r, err := NewResourceReader("testdata/root/sys", "testdata/root/sys")
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Read()
	if err == nil || res == nil {
		t.Fatalf("reading resources from a root without them: %v, %v; want an error naming them and an empty reading", res, err)
	}
}
