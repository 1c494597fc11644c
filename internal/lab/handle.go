package lab

// Lab is a lab on this machine, opened once from its directory (Open): its absolute path and the state
// its up recorded. The verbs on a lab that runs are its methods (Status, Pause, Unpause, Retune,
// SetOverlay, SetPodMTU, ImportToolsImage, …); each reads the state again first (another tare may have
// paused, retuned or switched the lab since Open), and keeps what it read in State. Starting a lab is Up
// and stopping one Down, which work from a directory whatever its state says.
type Lab struct {
	Dir   string // absolute
	State *State // as last read
}

// Open opens the lab in dir (any path to it): an error matching ErrNotRunning when dir holds none, and
// a clear one when its state cannot be read.
func Open(dir string) (*Lab, error) {
	st, err := loadState(dir)
	if err != nil {
		return nil, err
	}
	return &Lab{Dir: st.Dir, State: st}, nil
}

// Kubeconfig is the lab's admin kubeconfig.
func (l *Lab) Kubeconfig() string { return l.State.Kubeconfig }

// fresh reads the lab's state again and keeps it.
func (l *Lab) fresh() (*State, error) {
	st, err := loadState(l.Dir)
	if err != nil {
		return nil, err
	}
	l.State = st
	return st, nil
}
