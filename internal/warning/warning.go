package warning

// Warning qualifies one figure of a report.
type Warning struct {
	Code    string `json:"code"`
	Figure  string `json:"figure"`            // the JSON name of the figure it qualifies ("" for the whole report)
	Subject string `json:"subject,omitempty"` // what the figure is of, where the report has many: a variant, a node, a trial
	Message string `json:"message"`
	Cause   string `json:"likely_cause,omitempty"`
}

// String is the warning in one line: its code and message, and its likely cause when it has one.
func (w Warning) String() string {
	if w.Cause == "" {
		return w.Code + ": " + w.Message
	}
	return w.Code + ": " + w.Message + "; likely cause: " + w.Cause
}

// Note is the warning as a table prints it beside other notes: the figure it qualifies and its message.
func (w Warning) Note() string { return "warning (" + w.Figure + "): " + w.Message }

// Messages returns each warning's message, in order, for reports that print them as plain notes.
func Messages(ws []Warning) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Message
	}
	return out
}
