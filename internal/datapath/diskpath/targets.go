package diskpath

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/datapath"
	"github.com/tare-dev/tare/internal/kernel"
)

// The disk run's pod and its container, and where its volumes are mounted in it.
const (
	diskPod       = "disk"
	diskContainer = "fio"
	mountEmptyDir = "/mnt/emptydir"
	mountHostPath = "/mnt/hostpath"
	mountPVC      = "/mnt/pvc"
	rootFSDir     = "/tmp" // in the image, on the container's overlayfs
)

// TargetInfo is where a target's file is and how its trials do I/O.
type TargetInfo struct {
	Target string `json:"target"` // the label (host#2 for a second copy)
	File   string `json:"file"`   // as fio opens it: on the machine, or in the pod
	// Seen is the file's directory as tare sees it from the machine: through /proc/PID/root for the pod's.
	Seen   string `json:"seen_from_host"`
	FSType string `json:"fs_type"`
	Device string `json:"device"` // major:minor of the file system holding the directory (an overlay's own)
	// SameDevice says whether the directory is on the host target's device; for rootfs, whether the
	// overlay's upper layer is.
	SameDevice bool   `json:"same_device"`
	Free       uint64 `json:"free_bytes"` // before the run wrote its files
	Direct     bool   `json:"direct"`     // O_DIRECT; else buffered, fio dropping the file's cached pages first
}

// IO says how the target's trials read and write.
func (t TargetInfo) IO() string {
	if t.Direct {
		return "direct"
	}
	return "buffered, file's cache dropped"
}

// fileName is the lane's file: one per target and copy, named for it.
func fileName(l Lane) string {
	return "tare-disk-" + strings.ReplaceAll(l.Label(), "#", "-") + ".fio"
}

// hostDirs are the directories under the run's --dir: the host target's, the hostPath volume's and the
// local PersistentVolume's.
func hostDirs(dir string) map[Target]string {
	return map[Target]string{TargetHost: filepath.Join(dir, "host"), TargetHostPath: filepath.Join(dir, "hostpath"), TargetPVC: filepath.Join(dir, "pvc")}
}

// podDir is where the target's file lives as the pod sees it.
func podDir(t Target) string {
	switch t {
	case TargetEmptyDir:
		return mountEmptyDir
	case TargetHostPath:
		return mountHostPath
	case TargetPVC:
		return mountPVC
	}
	return rootFSDir
}

// fioServerArgs keep the pod's container running between trials (fio's server, on a socket in the pod
// that nothing connects to); the namespace in the socket's name lets tare find the process on the node.
func fioServerArgs(ns string) []string {
	return []string{"fio", "--server=sock:/tmp/tare-fio-" + ns + ".sock"}
}

// diskPodSpec is the run's pod on node: one container with fio, its volumes mounted.
func diskPodSpec(node, image string, pullNever bool, dirs map[Target]string, ns string, targets map[Target]bool, claim string) *corev1.Pod {
	pull := corev1.PullIfNotPresent
	if pullNever {
		pull = corev1.PullNever
	}
	zero, no := int64(0), false
	dirType := corev1.HostPathDirectory
	var vols []corev1.Volume
	var mounts []corev1.VolumeMount
	add := func(name, at string, src corev1.VolumeSource) {
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: src})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: at})
	}
	if targets[TargetEmptyDir] {
		add("emptydir", mountEmptyDir, corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}})
	}
	if targets[TargetHostPath] {
		add("hostpath", mountHostPath, corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dirs[TargetHostPath], Type: &dirType}})
	}
	if targets[TargetPVC] {
		add("pvc", mountPVC, corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}})
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: diskPod, Labels: map[string]string{datapath.RoleLabel: diskPod}},
		Spec: corev1.PodSpec{
			NodeName: node, TerminationGracePeriodSeconds: &zero, AutomountServiceAccountToken: &no, EnableServiceLinks: &no,
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Volumes:     vols,
			Containers: []corev1.Container{{Name: diskContainer, Image: image, ImagePullPolicy: pull, Command: fioServerArgs(ns),
				VolumeMounts: mounts}},
		},
	}
}

// localVolume is the pvc target's storage: a StorageClass without a provisioner, a local PersistentVolume
// on node at dir, and a claim bound to it by name. The class and the volume are cluster-wide: they are
// named for the run's namespace and deleted after it.
type localVolume struct {
	name string // of the class, the volume and the claim
	node string
	dir  string
	size int64
}

func (v localVolume) objects(ns string) (*storagev1.StorageClass, *corev1.PersistentVolume, *corev1.PersistentVolumeClaim) {
	bind := storagev1.VolumeBindingImmediate
	keep := corev1.PersistentVolumeReclaimRetain
	fs := corev1.PersistentVolumeFilesystem
	qty := *resource.NewQuantity(v.size, resource.BinarySI)
	labels := map[string]string{"app.kubernetes.io/managed-by": "tare", datapath.RoleLabel: ns}
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: v.name, Labels: labels},
		Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &bind}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: v.name, Labels: labels},
		Spec: corev1.PersistentVolumeSpec{
			Capacity: corev1.ResourceList{corev1.ResourceStorage: qty}, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: keep, StorageClassName: v.name, VolumeMode: &fs,
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: v.dir}},
			ClaimRef:               &corev1.ObjectReference{Namespace: ns, Name: v.name},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{v.node}}},
			}}}},
		}}
	class := v.name
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: v.name},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &class,
			VolumeName: v.name, VolumeMode: &fs, Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: qty}}}}
	return sc, pv, pvc
}

// create makes the class, the volume and the claim in ns.
func (v localVolume) create(ctx context.Context, cs kubernetes.Interface, ns string) error {
	sc, pv, pvc := v.objects(ns)
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating storage class %s: %w", v.name, err)
	}
	if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating persistent volume %s: %w", v.name, err)
	}
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating claim %s/%s: %w", ns, v.name, err)
	}
	return nil
}

// remove deletes the volume and the class (the claim goes with the namespace); absent ones are fine.
func (v localVolume) remove(ctx context.Context, cs kubernetes.Interface) error {
	var errs []error
	if err := cs.CoreV1().PersistentVolumes().Delete(ctx, v.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("deleting persistent volume %s: %w (kubectl delete pv %s)", v.name, err, v.name))
	}
	if err := cs.StorageV1().StorageClasses().Delete(ctx, v.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("deleting storage class %s: %w (kubectl delete storageclass %s)", v.name, err, v.name))
	}
	return errors.Join(errs...)
}

// ErrNoSpace says a target's file system has too little free space for the run's files.
var ErrNoSpace = errors.New("not enough free space")

// fsInfo reads the file system holding dir: its type, device and free space for an unprivileged writer.
func fsInfo(dir string) (fsType, device string, free uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "", "", 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	var s unix.Stat_t
	if err := unix.Stat(dir, &s); err != nil {
		return "", "", 0, fmt.Errorf("stat %s: %w", dir, err)
	}
	return fsTypeName(st.Type), fmt.Sprintf("%d:%d", unix.Major(s.Dev), unix.Minor(s.Dev)), st.Bavail * uint64(st.Bsize), nil //nolint:gosec // Bsize is positive
}

// fsTypeName names the file systems a target is likely on, else prints the magic number.
func fsTypeName(magic int64) string {
	switch magic {
	case unix.EXT4_SUPER_MAGIC:
		return "ext4"
	case unix.XFS_SUPER_MAGIC:
		return "xfs"
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs"
	case unix.OVERLAYFS_SUPER_MAGIC:
		return "overlay"
	case unix.TMPFS_MAGIC:
		return "tmpfs"
	}
	return fmt.Sprintf("0x%x", magic)
}

// checkSpace refuses a target whose file system has less free space than the run writes on it (need)
// plus a margin, naming the target and what is free.
func checkSpace(t TargetInfo, need uint64, files int, size int64) error {
	const margin = 64 << 20
	if t.Free < need+margin {
		return fmt.Errorf("%w for target %s: the %s file system at %s has %d MiB free and the run writes %d MiB there (%d file(s) of --size %d MiB) plus a margin of %d MiB: free space there or give a smaller --size",
			ErrNoSpace, t.Target, t.FSType, t.Seen, t.Free>>20, need>>20, files, size>>20, margin>>20)
	}
	return nil
}

// findProcess returns the PID of the process under procRoot whose command line is argv: how tare finds
// the pod's container on the node, to see its file systems through /proc/PID/root.
func findProcess(procRoot string, argv []string) (int, error) {
	pids, err := kernel.FindCmdline(procRoot, kernel.SameArgs(argv))
	if err != nil {
		return 0, err
	}
	if len(pids) == 0 {
		return 0, fmt.Errorf("no process %q on this machine: tare datapath disk runs on the node of its pod (give --node this machine's)", strings.Join(argv, " "))
	}
	return pids[0], nil
}
