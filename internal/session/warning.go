package session

import "fmt"

// Kind says where a warning came from.
type Kind string

const (
	// Source is the sampler meeting a source it could not read (a failed read of node resources, exit
	// notifications it could not drain). The sampler says each kind once per session.
	Source Kind = "source"
	// Skipped is a sample that failed: it is left out and the window goes on.
	Skipped Kind = "skipped"
	// SinkFailed is a sink (a recording, say) that failed: the session goes on without it.
	SinkFailed Kind = "sink"
)

// Warning is something that went wrong during a session without stopping it.
type Warning struct {
	// Seq is the sample being taken when the warning arose (sample.Sample.Seq); a Skipped sample's Seq is
	// never kept. Warnings raised while the sampler opens its sources belong to the first sample, 0.
	Seq     int    `json:"sample"`
	Kind    Kind   `json:"kind"`
	Message string `json:"message"`
}

// String is the warning as tare prints it.
func (w Warning) String() string {
	return fmt.Sprintf("sample %d: %s", w.Seq, w.Message)
}
