package htmlreport

// DatapathRun is a tare datapath run, net or disk, as its page shows it. It holds plain figures, which
// datapath fills (datapath.Result.View), so that this package builds without the runner and its
// Kubernetes client.
type DatapathRun struct {
	DatapathHead
	Groups  []DatapathGroup  // the lanes compared with each other, in the text table's order
	Trials  []DatapathTrial  // every trial, failed ones included, in the order run
	Targets []DatapathTarget // disk: where each target's file lives
	Notes   []string         // paths not measured, failed trials, warnings on the run's figures
}

// DatapathHead is what a datapath run's page (and its text table, datapath.Result) says of the run as a
// whole.
type DatapathHead struct {
	Verb       string // net or disk
	Lane       string // what the run compares: path or target
	Node       string // the node measured
	RemoteNode string // the cross-node paths' second node; "" when none
	Baseline   string // the lane every other is compared with (host)
	Setup      string // how the trials ran, in words: rounds, trial length, seed, streams or file size
	Took       string
	Cancelled  bool    // Ctrl-C cut the run short
	Alpha      float64 // the comparisons' significance level
	// Sweep names what the Value of the groups of one Chart sweeps (net: "message size"); "" draws no
	// chart of a figure against it.
	Sweep string
}

// DatapathGroup is the lanes compared with each other: one mode and message size (net), or one pattern,
// block size and queue depth (disk).
type DatapathGroup struct {
	Name string // as the text table heads it: "tcp-stream, 16k messages", "randread 4k qd1"
	// Chart is the charts the group's rows go into (net: its mode; disk: "", one chart per figure); the
	// groups of one Chart have the same Figures.
	Chart   string
	Value   string // what tells the group apart within its Chart: "16k", "randread 4k qd1"
	Figures []DatapathFigure
	Lanes   []DatapathLane
}

// DatapathFigure is one figure a trial yields.
type DatapathFigure struct {
	Name  string // as in the JSON: gbps, p50_us, iops, …
	Title string // as the text table heads its column: GBIT/S, P50 µs, IOPS, …
	Unit  string
}

// DatapathLane is one lane of a group: its finished trials' figures and its comparisons.
type DatapathLane struct {
	Label  string      // host, host#2, vxlan
	Values [][]float64 // per figure of the group, the finished trials' values
	Ratios []DatapathRatio
}

// DatapathRatio is one figure of a lane against another lane of its group (datapath.Shift).
type DatapathRatio struct {
	Figure  string // the figure's Name
	Against string // the baseline, or for vxlan also pod-cross-node
	// Ratio is the Hodges–Lehmann estimate of lane ÷ Against, with its interval [Lo, Hi] at Level.
	Ratio, Lo, Hi float64
	Level         float64
	P             float64 // Mann–Whitney
	MinP          float64 // the smallest p these trial counts can give
	Significant   bool    // P below the run's Alpha, this comparison alone
	N, NBase      int     // trials of the lane and of Against
}

// DatapathTrial is one trial as the trials table lists it.
type DatapathTrial struct {
	Seq, Round int
	Lane       string    // its lane's label
	Group      int       // its group's index in DatapathRun.Groups
	Values     []float64 // per figure of its group; nil when the trial failed
	NodeBusy   float64   // millicores over the trial's window
	Error      string    // why the trial failed
	Warnings   []string  // the trial window's
}

// DatapathTarget is where a disk target's file lives and how it is read and written.
type DatapathTarget struct {
	Target, File, FSType, Device string
	SameDevice                   bool   // on the host target's device (rootfs: the overlay's upper layer)
	IO                           string // direct, or buffered with the file's cache dropped
}
