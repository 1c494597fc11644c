package diskpath

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tare-dev/tare/internal/datapath"
	"github.com/tare-dev/tare/internal/kube"
	"github.com/tare-dev/tare/internal/session"
)

// Options say what a disk run measures.
type Options struct {
	Node      string // the node of the pod; "" for the node named Host, else the only one
	Host      string // the machine tare measures (sample.HostName)
	Namespace string // created for the run and deleted after it; it must not exist
	Image     string // holds fio
	PullNever bool   // the image is on the nodes already (the lab's)
	Targets   []Lane
	RWs       []RW
	BSs       []int
	Depths    []int
	Size      int64         // of every target's file
	Rounds    int           // trials of every lane, interleaved
	Duration  time.Duration // of every trial
	Seed      uint64        // orders the trials
	// Dir holds the host target's files and the directories of the hostPath volume and the local
	// PersistentVolume; it must be on the node's file system that holds the kubelet's and containerd's.
	Dir      string
	ProcRoot string // where the pod's process is found ("/proc")
	Session  session.Options
	// Exec runs a command in a pod's container (kube.Client.Exec); needed by the pod targets.
	Exec func(ctx context.Context, ns, pod, container string, cmd []string, stdout, stderr io.Writer) error
	Say  func(format string, a ...any) // progress lines; nil discards them
}

// Trial is one fio run on one lane, with what the node spent meanwhile.
type Trial struct {
	Seq int `json:"seq"` // from 1, in the order run
	Slot
	datapath.Usage
	FioOutcome
	CPUPer10k float64 `json:"cpu_per_10k_io"` // the node's CPU-seconds per 10,000 I/Os
	Error     string  `json:"error,omitempty"`
}

// Report is a disk run's result.
type Report struct {
	Node     string       `json:"node"`
	Baseline string       `json:"baseline"`
	Dir      string       `json:"dir"`
	Targets  []TargetInfo `json:"targets"`
	Lanes    []Lane       `json:"lanes"`
	Size     int64        `json:"size"`
	datapath.Schedule
	Trials []Trial `json:"trials"`
	Ratios []Ratio `json:"ratios"`
}

// ErrNoFio says fio is not installed on the machine.
var ErrNoFio = errors.New("fio is not installed on this machine: tare lab install --datapath (or apt-get install fio)")

// run is a run under way: what it made, to use and undo.
type run struct {
	o       Options
	pid     int // the pod's process on the machine
	infos   map[string]*TargetInfo
	madeDir []string // removed at the end, deepest first
	files   []string // the files under Dir, removed at the end
}

// Run measures every lane Rounds times in shuffled order with the same fio job on each target, the
// measuring session running during each trial, and compares every target with the host. Before writing
// it checks every target's free space; it lays out each target's file once, before the trials, and
// checks whether the target takes O_DIRECT. Everything it creates is removed before it returns, also on
// error or Ctrl-C: the namespace (the pod and the claim), the local PersistentVolume and its
// StorageClass, the files and the directories it made. A run cut short returns the trials finished so
// far with ctx's error.
func Run(ctx context.Context, cs kubernetes.Interface, o Options) (rep Report, err error) {
	say := o.Say
	if say == nil {
		say = func(string, ...any) {}
	}
	o.Say = say
	rep = Report{Node: o.Host, Baseline: string(TargetHost), Dir: o.Dir, Size: o.Size,
		Schedule: datapath.ScheduleOf(o.Rounds, o.Duration, o.Seed)}
	plan := Plan(o.Targets, o.RWs, o.BSs, o.Depths)
	rep.Lanes = plan
	used := map[Target]bool{}
	for _, l := range o.Targets {
		used[l.Target] = true
	}
	inPod := used[TargetRootFS] || used[TargetEmptyDir] || used[TargetHostPath] || used[TargetPVC]
	if used[TargetHost] {
		if _, err := exec.LookPath("fio"); err != nil {
			return rep, ErrNoFio
		}
	}
	if inPod && (cs == nil || o.Exec == nil) {
		return rep, errors.New("the pod targets need a cluster: give --kubeconfig (or start one with tare lab up), or measure --targets host only")
	}
	r := &run{o: o, infos: map[string]*TargetInfo{}}
	defer r.removeFiles(say)
	dirs := hostDirs(o.Dir)
	if err := r.makeDirs(dirs, used); err != nil {
		return rep, err
	}
	if inPod {
		n, _, err := datapath.PickNodes(ctx, cs, o.Node, o.Host, say)
		if err != nil {
			return rep, err
		}
		rep.Node = n.Node
		vol := localVolume{name: "tare-disk-" + o.Namespace, node: rep.Node, dir: dirs[TargetPVC], size: o.Size}
		if err := kube.CreateRunNamespace(ctx, cs, o.Namespace, "tare datapath disk"); err != nil {
			return rep, err
		}
		// The namespace first (the pod, the claim), then the volume and its class, which the claim held.
		defer func() {
			bg := context.WithoutCancel(ctx)
			if err := kube.DeleteNamespace(bg, cs, o.Namespace, time.Minute); err != nil {
				say("warning: %v", err)
			}
			if used[TargetPVC] {
				if err := vol.remove(bg, cs); err != nil {
					say("warning: %v", err)
				}
			}
		}()
		if used[TargetPVC] {
			if err := vol.create(ctx, cs, o.Namespace); err != nil {
				return finish(rep, err)
			}
		}
		if err := r.startPod(ctx, cs, rep.Node, dirs, used, vol.name); err != nil {
			return finish(rep, err)
		}
	}
	if err := r.inspect(o.Targets, dirs); err != nil {
		return finish(rep, err)
	}
	for _, l := range o.Targets {
		if err := r.layout(ctx, l); err != nil {
			return finish(rep, err)
		}
		t := r.infos[l.Label()]
		say("target %s: %s on %s (device %s%s), %s I/O", t.Target, t.File, t.FSType, t.Device, sameWord(*t), t.IO())
	}
	for _, l := range o.Targets {
		rep.Targets = append(rep.Targets, *r.infos[l.Label()])
	}
	trials, err := datapath.Rounds[Lane, Trial]{Lanes: plan, N: o.Rounds, Seed: o.Seed, Say: say, Line: Trial.line, Name: func(l Lane) string {
		return l.Label() + " " + groupName(l.RW, l.BS, l.IODepth)
	}, Trial: func(seq int, sl Slot) (Trial, error) {
		t := r.trial(ctx, sl)
		t.Seq = seq
		return t, nil
	}}.Run(ctx)
	rep.Trials, rep.Cancelled = trials, datapath.Cancelled(ctx, err)
	return finish(rep, err)
}

func finish(rep Report, err error) (Report, error) {
	rep.Finished()
	rep.Ratios = Compare(rep.Trials, rep.Baseline)
	return rep, err
}

// makeDirs makes the directories under Dir the targets use, remembering those it made.
func (r *run) makeDirs(dirs map[Target]string, used map[Target]bool) error {
	if _, err := os.Stat(r.o.Dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(r.o.Dir, 0o755); err != nil {
			return fmt.Errorf("making --dir %s: %w", r.o.Dir, err)
		}
		r.madeDir = append(r.madeDir, r.o.Dir)
	}
	for _, t := range []Target{TargetHost, TargetHostPath, TargetPVC} {
		if !used[t] {
			continue
		}
		if _, err := os.Stat(dirs[t]); err == nil {
			continue
		}
		if err := os.Mkdir(dirs[t], 0o755); err != nil {
			return fmt.Errorf("making %s: %w", dirs[t], err)
		}
		r.madeDir = append(r.madeDir, dirs[t])
	}
	return nil
}

// removeFiles deletes the targets' files seen from the machine (the pod's own go with it) and the
// directories the run made.
func (r *run) removeFiles(say func(string, ...any)) {
	for _, f := range r.files {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			say("warning: %v", err)
		}
	}
	for i := len(r.madeDir) - 1; i >= 0; i-- {
		if err := os.Remove(r.madeDir[i]); err != nil {
			say("warning: %v", err)
		}
	}
}

// startPod creates the run's pod and finds its process on the machine.
func (r *run) startPod(ctx context.Context, cs kubernetes.Interface, node string, dirs map[Target]string, used map[Target]bool, claim string) error {
	say := r.o.Say
	say("starting the fio pod in namespace %s", r.o.Namespace)
	pod := diskPodSpec(node, r.o.Image, r.o.PullNever, dirs, r.o.Namespace, used, claim)
	if _, err := cs.CoreV1().Pods(r.o.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating pod %s/%s: %w", r.o.Namespace, diskPod, err)
	}
	if _, err := datapath.WaitPodsReady(ctx, cs, r.o.Namespace, []string{diskPod}, 2*time.Minute); err != nil {
		return err
	}
	// The container runs once the pod is Ready; its process may take a moment to show.
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; {
		if r.pid, err = findProcess(r.o.ProcRoot, fioServerArgs(r.o.Namespace)); err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// inspect reads each target's file system as the machine sees it, checks that every one is on the host
// target's device, and that each has room for the files the run writes on its file system.
func (r *run) inspect(targets []Lane, dirs map[Target]string) error {
	hostDev := ""
	if _, dev, _, err := fsInfo(dirs[TargetHost]); err == nil {
		hostDev = dev
	} else if hostDev, err = deviceOfDir(r.o.Dir); err != nil {
		return err
	}
	for _, l := range targets {
		t := &TargetInfo{Target: l.Label(), Direct: true}
		if l.InPod() {
			t.File = podDir(l.Target) + "/" + fileName(l)
			t.Seen = filepath.Join(r.o.ProcRoot, strconv.Itoa(r.pid), "root", podDir(l.Target))
		} else {
			t.File = filepath.Join(dirs[TargetHost], fileName(l))
			t.Seen = dirs[TargetHost]
		}
		var err error
		if t.FSType, t.Device, t.Free, err = fsInfo(t.Seen); err != nil {
			return fmt.Errorf("target %s: %w", t.Target, err)
		}
		under := t.Device
		if t.FSType == "overlay" {
			if under, err = r.overlayUpperDevice(); err != nil {
				return fmt.Errorf("target %s: %w", t.Target, err)
			}
		}
		t.SameDevice = under == hostDev
		r.infos[t.Target] = t
		if d, ok := dirs[l.Target]; ok {
			r.files = append(r.files, filepath.Join(d, fileName(l)))
		}
	}
	// Every target writes one file; a file system holding several targets must have room for them all.
	need := uint64(len(targets)) * uint64(r.o.Size) //nolint:gosec // Size is positive
	for _, l := range targets {
		if err := checkSpace(*r.infos[l.Label()], need, len(targets), r.o.Size); err != nil {
			return err
		}
	}
	return nil
}

func deviceOfDir(dir string) (string, error) {
	_, dev, _, err := fsInfo(dir)
	return dev, err
}

// overlayUpperDevice is the device of the pod's root overlay's upper layer, from its mountinfo.
func (r *run) overlayUpperDevice() (string, error) {
	fs, err := procfs.NewFS(r.o.ProcRoot)
	if err != nil {
		return "", err
	}
	p, err := fs.Proc(r.pid)
	if err != nil {
		return "", err
	}
	mounts, err := p.MountInfo()
	if err != nil {
		return "", fmt.Errorf("reading the pod's mounts: %w", err)
	}
	for _, m := range mounts {
		if up := m.SuperOptions["upperdir"]; m.MountPoint == "/" && m.FSType == "overlay" && up != "" {
			return deviceOfDir(up)
		}
	}
	return "", errors.New("the pod's root is not an overlay with an upper layer")
}

// runFio runs fio with args for the lane, on the machine or in the pod, and returns what it printed.
func (r *run) runFio(ctx context.Context, l Lane, args []string) (stdout, stderr []byte, err error) {
	var out, errb strings.Builder
	if l.InPod() {
		err = r.o.Exec(ctx, r.o.Namespace, diskPod, diskContainer, args, &out, &errb)
	} else {
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		err = cmd.Run()
	}
	return []byte(out.String()), []byte(errb.String()), err
}

// job is the lane's fio job on its target's file.
func (r *run) job(l Lane) fioJob {
	t := r.infos[l.Label()]
	head := min(r.o.Duration/5, time.Second)
	return fioJob{File: t.File, Size: r.o.Size, Lane: l, Direct: t.Direct, Ramp: head, Runtime: r.o.Duration - head}
}

// layout writes the target's file and finds whether it takes O_DIRECT: a one-block direct read that
// fails with EINVAL means buffered I/O for the target's trials.
func (r *run) layout(ctx context.Context, l Lane) error {
	t := r.infos[l.Label()]
	j := r.job(l)
	if out, errOut, err := r.runFio(ctx, l, j.layoutArgs()); err != nil {
		return fmt.Errorf("target %s: laying out %s: %w: %s", t.Target, t.File, err, datapath.LastLine(append(out, errOut...)))
	}
	refused := false // EINVAL: the file system does not take O_DIRECT
	probe := func() error {
		out, errOut, err := r.runFio(ctx, l, j.probeArgs())
		refused = strings.Contains(string(out)+string(errOut), "Invalid argument")
		if err == nil {
			_, err = ParseFio(out, false)
		}
		if err != nil {
			return fmt.Errorf("target %s: reading %s: %w: %s", t.Target, t.File, err, datapath.LastLine(append(out, errOut...)))
		}
		return nil
	}
	if err := probe(); err == nil || !refused {
		return err
	}
	t.Direct, j.Direct = false, false
	return probe()
}

// trial runs the lane's job while the session measures its steady part: the session opens first (it
// takes a while), then fio starts; the window begins after fio's ramp and ends a margin before fio does.
func (r *run) trial(ctx context.Context, sl Slot) Trial {
	t := Trial{Slot: sl}
	j := r.job(sl.Lane)
	tail := min(r.o.Duration/5, time.Second)
	sopts := r.o.Session
	sopts.Duration = r.o.Duration - j.Ramp - tail
	ses, err := session.Open(ctx, sopts)
	if err != nil {
		t.Error = fmt.Sprintf("measuring: %v", err)
		return t
	}
	defer ses.Close()
	type result struct {
		out, errOut []byte
		err         error
	}
	done := make(chan result, 1)
	fctx, stop := context.WithTimeout(ctx, r.o.Duration+time.Minute)
	defer stop()
	go func() {
		out, errOut, err := r.runFio(fctx, sl.Lane, j.args())
		done <- result{out, errOut, err}
	}()
	select {
	case <-ctx.Done():
	case <-time.After(j.Ramp):
	}
	u, uerr := datapath.UsageOf(ses.Run(ctx))
	res := <-done
	o, perr := ParseFio(res.out, sl.Lane.RW.Writes())
	switch {
	case uerr != nil:
		t.Error = uerr.Error()
	case perr != nil && res.err != nil:
		t.Error = fmt.Sprintf("fio: %v: %s", res.err, datapath.LastLine(append(res.out, res.errOut...)))
	case perr != nil:
		t.Error = perr.Error()
	}
	t.Usage, t.FioOutcome = u, o
	if t.Error == "" {
		t.CPUPer10k = t.NodeBusy / 1000 / (t.IOPS / 1e4)
	}
	return t
}

// line is a trial's one-line summary for the progress output.
func (t Trial) line() string {
	if t.Error != "" {
		return "failed: " + t.Error
	}
	return fmt.Sprintf("%.0f IOPS, %.1f MB/s, clat p50 %.1f µs p99 %.1f µs, node busy %.0fm", t.IOPS, t.MBps, t.P50us, t.P99us, t.NodeBusy)
}

func sameWord(t TargetInfo) string {
	if t.SameDevice {
		return ", the host target's"
	}
	return ", NOT the host target's"
}
