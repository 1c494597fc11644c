package diskpath

import (
	"errors"
	"testing"
)

// The pod mounts a volume for each target that needs one, and the local volume is pinned to the node and
// pre-bound to its claim, in a class without a provisioner.
func TestDatapathDiskObjects(t *testing.T) {
	t.Parallel()
	dirs := hostDirs("/var/tmp/d")
	p := diskPodSpec("vm", "img", true, dirs, "ns", map[Target]bool{TargetEmptyDir: true, TargetHostPath: true, TargetPVC: true}, "tare-disk-ns")
	mounts := map[string]string{}
	for _, m := range p.Spec.Containers[0].VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	if len(p.Spec.Volumes) != 3 || mounts["emptydir"] != mountEmptyDir || mounts["pvc"] != mountPVC || p.Spec.Volumes[1].HostPath.Path != "/var/tmp/d/hostpath" {
		t.Errorf("volumes %+v, mounts %v", p.Spec.Volumes, mounts)
	}
	if p.Spec.NodeName != "vm" || p.Spec.Containers[0].Command[1] != "--server=sock:/tmp/tare-fio-ns.sock" {
		t.Errorf("%+v", p.Spec)
	}
	sc, pv, pvc := localVolume{name: "tare-disk-ns", node: "vm", dir: dirs[TargetPVC], size: 256 << 20}.objects("ns")
	if sc.Provisioner != "kubernetes.io/no-provisioner" || pv.Spec.Local.Path != "/var/tmp/d/pvc" || pv.Spec.ClaimRef.Namespace != "ns" ||
		pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values[0] != "vm" || pvc.Spec.VolumeName != pv.Name ||
		*pvc.Spec.StorageClassName != sc.Name {
		t.Errorf("%+v\n%+v\n%+v", sc, pv, pvc)
	}
}

// A target is refused when its file system cannot hold the run's files and the margin.
func TestDatapathDiskSpace(t *testing.T) {
	t.Parallel()
	ti := TargetInfo{Target: "pvc", FSType: "ext4", Seen: "/x", Free: 560 << 20}
	if err := checkSpace(ti, 512<<20, 2, 256<<20); !errors.Is(err, ErrNoSpace) {
		t.Errorf("512 MiB + 64 MiB margin in 560 MiB: %v", err)
	}
	if err := checkSpace(ti, 256<<20, 1, 256<<20); err != nil {
		t.Error(err)
	}
}
