package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tare-dev/tare/internal/userfile"
)

// stateVersion is bumped when State changes incompatibly.
const stateVersion = 1

// State is what a lab records about itself in DIR/state.json, rewritten after every step so `down`
// can clean up after a crash or a kill -9 of tare.
type State struct {
	Version       int               `json:"version"`
	Dir           string            `json:"dir"`
	Profile       string            `json:"profile"`
	Node          string            `json:"node,omitempty"`
	Server        string            `json:"server,omitempty"`
	Kubeconfig    string            `json:"kubeconfig,omitempty"`
	ControlOnly   bool              `json:"control_plane_only"`
	APIServerOnly bool              `json:"api_server_only,omitempty"` // etcd and kube-apiserver only
	KwokNodes     int               `json:"kwok_nodes"`
	PortOffset    int               `json:"port_offset,omitempty"` // UpOptions.PortOffset
	Audit         string            `json:"audit_log,omitempty"`
	Started       time.Time         `json:"started"`
	Ready         bool              `json:"ready"`
	Processes     []Process         `json:"processes"`
	Cgroups       []string          `json:"cgroups,omitempty"`      // cgroup directories the lab created
	NetnsBefore   []string          `json:"netns_before,omitempty"` // /run/netns entries that existed before up
	Sysctls       map[string]string `json:"sysctls,omitempty"`      // values before up, restored by down
	ExtraNodes    []ExtraNode       `json:"extra_nodes,omitempty"`  // real nodes beyond the first, recorded before their network is made
	Overlay       Overlay           `json:"overlay,omitempty"`      // how pods cross between nodes (empty: routed), recorded before a VTEP is made
	MadeDirs      []string          `json:"made_dirs,omitempty"`    // machine directories absent before up
	Steps         []Step            `json:"steps,omitempty"`
	Tunings       []Tuning          `json:"tunings,omitempty"`
	Paused        *PauseState       `json:"paused,omitempty"` // set from the start of tare lab pause to the end of unpause
	// Caller is the PID of the process that started the lab with UpOptions.StopWithCaller (0: none): the
	// components a retune by that process restarts end with it too. A retune by any other process (tare
	// lab retune on such a lab) starts them without, so they do not end with a short-lived command.
	Caller int `json:"stop_with_caller_pid,omitempty"`
	// UserContext is the context tare lab up added to the user's kubeconfig (AddUserContext), which down
	// removes; nil when none was added (lab.Up alone adds none).
	UserContext *UserContext `json:"user_context,omitempty"`
}

// components lists the lab components the lab runs (UpOptions.components).
func (s *State) components() []string {
	return UpOptions{ControlPlaneOnly: s.ControlOnly, APIServerOnly: s.APIServerOnly, KwokNodes: s.KwokNodes}.components()
}

// ports is where the lab listens.
func (s *State) ports() portSet { return portSet{s.PortOffset} }

// Process is one daemon the lab started. StartTicks (field 22 of /proc/PID/stat) guards against PID reuse.
type Process struct {
	Name       string   `json:"name"`
	PID        int      `json:"pid"`
	StartTicks uint64   `json:"start_ticks"`
	Args       []string `json:"args"`
	Log        string   `json:"log"`
	Node       string   `json:"node,omitempty"` // the extra node it serves (empty: node 1 or the control plane)
}

// Step is one stage of `up` and how long it took from the start of `up`.
type Step struct {
	Name string        `json:"name"`
	At   time.Duration `json:"at_ns"`   // since up started
	Took time.Duration `json:"took_ns"` // since the previous step
}

// ErrNotRunning says there is no lab in the directory.
var ErrNotRunning = errors.New("no lab")

func statePath(dir string) string { return filepath.Join(dir, "state.json") }

// loadState reads DIR/state.json. dir is any path to the lab's directory: the one place it is made
// absolute (State.Dir), which every user of the state then reads.
func loadState(dir string) (*State, error) {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	b, err := os.ReadFile(statePath(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s (start one with tare lab up)", ErrNotRunning, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the lab state: %w", err)
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("the lab state %s is corrupt (%w): tare lab down --dir %s still stops what it can find", statePath(dir), err, dir)
	}
	if s.Version > stateVersion {
		return nil, fmt.Errorf("the lab state %s was written by a newer tare (version %d > %d)", statePath(dir), s.Version, stateVersion)
	}
	if s.Version < 1 {
		return nil, fmt.Errorf("the lab state %s names no version: tare lab up did not write it, or it was damaged; tare lab down --dir %s still stops what it can find", statePath(dir), dir)
	}
	// The directory is where the state was found, whatever the file says: a state copied or edited by hand
	// must not make tare write or look elsewhere.
	s.Dir = dir
	if s.Paused != nil && s.Paused.Since.IsZero() {
		return nil, fmt.Errorf("the lab state %s says the lab is paused but not since when: unpause cannot trust it; tare lab down --dir %s still stops what it can find", statePath(dir), dir)
	}
	return &s, nil
}

// save writes the state atomically (write to a temporary file, then rename).
func (s *State) save() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := userfile.Write(statePath(s.Dir), func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
		return fmt.Errorf("writing the lab state: %w", err)
	}
	return nil
}

// Running returns the lab processes that are still alive (same PID and start time).
func (s *State) Running() []Process {
	var out []Process
	for _, p := range s.Processes {
		if alive(p) {
			out = append(out, p)
		}
	}
	return out
}

// Whole says why the lab in dir cannot serve as it runs (not ready, paused, a process stopped), and what
// to do; nil when it is up, not paused, and every process it started is alive.
func (s *State) Whole(dir string) error {
	switch {
	case !s.Ready:
		return fmt.Errorf("the lab in %s is not ready: start it with tare lab up", dir)
	case s.Paused != nil:
		return fmt.Errorf("the lab in %s is paused: tare lab unpause resumes it", dir)
	case len(s.Running()) != len(s.Processes):
		return fmt.Errorf("the lab in %s has stopped processes: tare lab down, then up", dir)
	}
	return nil
}

// Sets are the lab's tunings beyond its profile's: the --set flags of up, or of the last retune.
func (s *State) Sets() []Tuning {
	prof, err := ProfileTunings(s.Profile)
	if err != nil || len(prof) > len(s.Tunings) {
		return slices.Clone(s.Tunings)
	}
	return slices.Clone(s.Tunings[len(prof):])
}

// realNodes are the names of the lab's real nodes: node 1 (the machine), then the extra nodes.
func (s *State) realNodes() []string {
	out := []string{s.Node}
	for _, n := range s.ExtraNodes {
		out = append(out, n.Name)
	}
	return out
}

// Process returns the recorded process of a component.
func (s *State) Process(name string) (Process, bool) {
	for _, p := range s.Processes {
		if p.Name == name {
			return p, true
		}
	}
	return Process{}, false
}
