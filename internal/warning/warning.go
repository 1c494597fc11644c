package warning

import "slices"

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

// Messages returns each warning's message, in order, for reports that print them as plain notes.
func Messages(ws []Warning) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Message
	}
	return out
}

// Codes returns the distinct codes of ws, in the order they first appear.
func Codes(ws []Warning) []string {
	var out []string
	for _, w := range ws {
		if !slices.Contains(out, w.Code) {
			out = append(out, w.Code)
		}
	}
	return out
}

// Has reports whether ws holds a warning with the code.
func Has(ws []Warning, code string) bool {
	for _, w := range ws {
		if w.Code == code {
			return true
		}
	}
	return false
}
