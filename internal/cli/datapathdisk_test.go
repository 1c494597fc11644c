package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tare-dev/tare/internal/datapath/diskpath"
	"github.com/tare-dev/tare/internal/stats"
	"github.com/tare-dev/tare/internal/testload"
)

// diskReads is the kernel's count of reads completed on the block device holding dir (/proc/diskstats'
// fourth field), scaled so that a testload trace's millicores are reads per second: the test's own
// ground truth, not what tare reads (fio's report).
func diskReads(t *testing.T, dir string) func() time.Duration {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("%d %d ", unix.Major(st.Dev), unix.Minor(st.Dev))
	return func() time.Duration {
		b, err := os.ReadFile("/proc/diskstats")
		if err != nil {
			t.Error(err)
			return 0
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) > 3 && strings.HasPrefix(strings.Join(f[:2], " ")+" ", prefix) {
				var n int64
				_, _ = fmt.Sscan(f[3], &n)
				return time.Duration(n) * time.Millisecond
			}
		}
		t.Errorf("no line for device %s in /proc/diskstats", prefix)
		return 0
	}
}

func decodeDisk(t *testing.T, out string) diskpath.Report {
	t.Helper()
	var r diskpath.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("decoding: %v\n%.2000s", err, out)
	}
	return r
}

func diskRatio(r diskpath.Report, target, metric string) (diskpath.Ratio, bool) {
	for _, x := range r.Ratios {
		if x.Target == target && x.Metric == metric {
			return x, true
		}
	}
	return diskpath.Ratio{}, false
}

// gone fails the test when path exists.
func gone(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left behind (%v)", path, err)
	}
}

// TestDatapathDiskHost: bad input is refused with exit 2; without fio on PATH the error says how to
// install it; a target without room is refused before anything is written; an A/A run of the host
// against itself is not significant and fio's IOPS agree with the reads the kernel completed on the
// device over each trial's window; Ctrl-C keeps the finished trials; every file and directory the run
// made is gone. No cluster needed.
func TestDatapathDiskHost(t *testing.T) {
	requireRoot(t)
	if testing.Short() {
		t.Skip("runs fio for a minute")
	}
	if _, errOut, err := run(context.Background(), "lab", "install", "--datapath"); err != nil {
		t.Fatalf("lab install --datapath: %v\n%s", err, errOut)
	}
	for _, args := range [][]string{
		{"--targets", "host,nfs"},
		{"--rw", "randrw"},
		{"--bs", "1000"},
		{"--iodepth", "0"},
		{"--size", "10k"},
		{"--size", "1m", "--bs", "4m"},
		{"--duration", "500ms"},
		{"--trials", "0"},
		{"--dir", "relative"},
	} {
		_, errOut, err := run(context.Background(), append([]string{"datapath", "disk"}, args...)...)
		var ec ExitCoder
		if !errors.As(err, &ec) || ec.ExitCode() != 2 || errOut == "" {
			t.Errorf("datapath disk %v: %v (stderr %q), want a usage error", args, err, errOut)
		}
	}
	dir := filepath.Join(t.TempDir(), "disk")

	t.Run("no fio", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		_, _, err := run(context.Background(), "datapath", "disk", "--targets", "host", "--dir", dir)
		if err == nil || !strings.Contains(err.Error(), "tare lab install --datapath") {
			t.Errorf("without fio: %v", err)
		}
		gone(t, dir)
	})

	t.Run("no room", func(t *testing.T) {
		small := t.TempDir()
		if err := unix.Mount("tmpfs", small, "tmpfs", 0, "size=96m"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = unix.Unmount(small, unix.MNT_DETACH) })
		_, _, err := run(context.Background(), "datapath", "disk", "--targets", "host", "--size", "64m", "--dir", filepath.Join(small, "disk"))
		if !errors.Is(err, diskpath.ErrNoSpace) || !strings.Contains(err.Error(), "target host") || !strings.Contains(err.Error(), "MiB free") {
			t.Errorf("64m on a 96m tmpfs (with a 64m margin): %v", err)
		}
		if ents, err := os.ReadDir(small); err != nil || len(ents) != 0 {
			t.Errorf("left on the tmpfs: %v %v", ents, err)
		}
	})

	trace := testload.TraceUsage(diskReads(t, filepath.Dir(dir)))
	out, errOut, err := run(context.Background(), "datapath", "disk", "--targets", "host,host", "--rw", "randread", "--bs", "4k", "--size", "128m",
		"--trials", "6", "--duration", "2s", "--dir", dir, "-o", "json")
	trace.Stop()
	if err != nil {
		t.Fatalf("datapath disk: %v\n%s", err, errOut)
	}
	r := decodeDisk(t, out)
	if len(r.Trials) != 12 || len(r.Targets) != 2 || !r.Targets[0].Direct || !r.Targets[1].SameDevice {
		t.Fatalf("%d trials, targets %+v\n%s", len(r.Trials), r.Targets, errOut)
	}
	var off []float64
	for _, tr := range r.Trials {
		if tr.Error != "" {
			t.Errorf("trial %d: %s", tr.Seq, tr.Error)
			continue
		}
		reads, ok := trace.Between(tr.Start, tr.End)
		if !ok {
			t.Errorf("trial %d: the diskstats trace does not cover %s–%s", tr.Seq, tr.Start, tr.End)
			continue
		}
		t.Logf("trial %d %s: fio %.0f IOPS, the kernel %.0f reads/s; %.3f CPU-s per 10k I/Os", tr.Seq, tr.Lane.Label(), tr.IOPS, reads, tr.CPUPer10k)
		off = append(off, tr.IOPS/reads)
		if tr.CPUPer10k <= 0 || tr.P99us < tr.P50us {
			t.Errorf("trial %d: %+v", tr.Seq, tr)
		}
	}
	// fio counts over its whole run after the ramp, the kernel over the session's window within it; other
	// programs' reads on the device count too (few: their files are cached). Within 10% in the median.
	if m := stats.MedianOf(off); m < 0.9 || m > 1.1 {
		t.Errorf("fio's IOPS ÷ the kernel's reads per second: median %.3f over %v", m, off)
	}
	// A/A. 6 against 6 fails only on complete separation (p = 2/924).
	for _, metric := range []string{"iops", "clat_p50_us"} {
		x, ok := diskRatio(r, "host#2", metric)
		if !ok || x.N != 6 || x.P <= 2.0/924+1e-9 {
			t.Errorf("A/A %s: %+v", metric, x)
		}
		t.Logf("A/A %s: host#2 ÷ host %.3f [%.3f, %.3f] p=%.3f", metric, x.Ratio, x.Lo, x.Hi, x.P)
	}
	gone(t, dir)

	// Ctrl-C once the second trial has begun: what was measured is printed, the files are removed.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout strings.Builder
	progress := &cancelOn{marker: "trial 1/", cancel: cancel}
	err = Execute(ctx, []string{"datapath", "disk", "--targets", "host", "--size", "64m", "--trials", "10", "--duration", "2s", "--dir", dir, "-o", "json"},
		strings.NewReader(""), &stdout, progress)
	if err == nil {
		t.Fatalf("cancelled run succeeded\n%s", progress.buf.String())
	}
	r = decodeDisk(t, stdout.String())
	if len(r.Trials) == 0 || len(r.Trials) >= 10 || !r.Cancelled {
		t.Errorf("cancelled run kept %d trials, cancelled %v", len(r.Trials), r.Cancelled)
	}
	gone(t, dir)
	if out, _ := exec.Command("pgrep", "-f", "fio --name=tare").Output(); len(out) > 0 {
		t.Errorf("fio left running: %s", out)
	}
}

// TestDatapathDiskOnLab: a one-node lab, every target, random 4k reads: each runs on the host target's
// device; hostPath against the host (the same device, no overlay) shows no large effect (its interval
// reaches within 15% of 1); rootfs (overlayfs) is reported with its interval; the namespace, the
// PersistentVolume, the StorageClass and every file are gone after it.
func TestDatapathDiskOnLab(t *testing.T) {
	checkLab(t) // before the install: skips in -short mode
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	if _, errOut, err := run(ctx, "lab", "install", "--datapath"); err != nil {
		t.Fatalf("lab install --datapath: %v\n%s", err, errOut)
	}
	labdir, kc := sharedLab(ctx, t)
	cs := clientsetOf(t, kc)
	pod := tracePod(ctx, cs, "tare-datapath-disk", "disk")
	dir := filepath.Join(t.TempDir(), "disk")
	out, errOut, err := run(ctx, "datapath", "disk", "--kubeconfig", kc, "--lab-dir", labdir, "--targets", "host,hostpath,rootfs,emptydir,pvc",
		"--rw", "randread", "--bs", "4k", "--size", "128m", "--trials", "5", "--duration", "2s", "--dir", dir, "-o", "json")
	t.Log(errOut)
	if err != nil {
		t.Fatalf("datapath disk: %v", err)
	}
	r := decodeDisk(t, out)
	for _, ti := range r.Targets {
		t.Logf("target %s: %s %s device %s same %v direct %v", ti.Target, ti.File, ti.FSType, ti.Device, ti.SameDevice, ti.Direct)
		if !ti.SameDevice {
			t.Errorf("target %s is not on the host target's device: %+v", ti.Target, ti)
		}
	}
	for _, tr := range r.Trials {
		if tr.Error != "" {
			t.Errorf("trial %d (%s): %s", tr.Seq, tr.Lane.Label(), tr.Error)
		}
	}
	for _, target := range []string{"hostpath", "rootfs", "emptydir", "pvc"} {
		for _, metric := range []string{"iops", "cpu_per_10k_io"} {
			x, ok := diskRatio(r, target, metric)
			if !ok || x.N != 5 {
				t.Errorf("%s %s against host: %+v", target, metric, x)
				continue
			}
			t.Logf("%s %s ÷ host: %.3f [%.3f, %.3f] p=%.3f", target, metric, x.Ratio, x.Lo, x.Hi, x.P)
		}
	}
	// hostPath and host read the same file system on the same device; what differs is that fio runs in
	// the pod's cgroups (their I/O and memory accounting, a CPU share beside the lab). Five trials a lane
	// on a 2-core VM's disk, whose IOPS wander ±10% from trial to trial, can show that as a few percent
	// either way (CI once: 0.923 [0.894, 0.968], once 1.183 [0.975, 1.313]), so the claim held here is
	// the one five trials can make: no large effect is proven (the interval reaches within 15% of 1), and
	// the estimate is within 25% of 1.
	if x, _ := diskRatio(r, "hostpath", "iops"); x.Ratio < 0.75 || x.Ratio > 1/0.75 || x.Lo > 1/0.85 || x.Hi < 0.85 {
		t.Errorf("hostPath against host, the same device without an overlay: %.3f [%.3f, %.3f], want the estimate within [0.75, 1.33] and part of the interval within [0.85, 1.18]", x.Ratio, x.Lo, x.Hi)
	}
	// The pod's fio is the pod's: in every trial tare credits the pod what its cgroup used (most on the
	// targets fio reads from inside it: hostpath, rootfs, emptydir, pvc).
	checkPodCPU(t, "pod tare-datapath-disk/disk", pod.stop(t), out)
	waitNamespaceGone(ctx, t, cs, "tare-datapath-disk")
	if pvs := kubectl(t, kc, "get", "pv,storageclass", "-o", "name"); strings.Contains(pvs, "tare-disk") {
		t.Errorf("left in the cluster: %s", pvs)
	}
	gone(t, dir)
}
