package warning

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestWarning(t *testing.T) {
	t.Parallel()
	ws := []Warning{
		{Code: "drift", Figure: "node-busy", Message: "moved with time", Cause: "other work"},
		{Code: "outlier", Figure: "node-busy", Subject: "a", Message: "a trial far from the median"},
		{Code: "drift", Figure: "rss", Message: "grew"},
	}
	if got := ws[0].String(); got != "drift: moved with time; likely cause: other work" {
		t.Errorf("String with a cause: %q", got)
	}
	if got := ws[1].String(); got != "outlier: a trial far from the median" {
		t.Errorf("String without a cause: %q", got)
	}
	if got := Messages(ws); !slices.Equal(got, []string{"moved with time", "a trial far from the median", "grew"}) {
		t.Errorf("Messages: %q", got)
	}
	if got := ws[1].Note(); got != "warning (node-busy): a trial far from the median" {
		t.Errorf("Note: %q", got)
	}
	// The JSON names are the contract scripts match; an empty subject or cause is left out.
	b, err := json.Marshal(ws[2])
	if err != nil || string(b) != `{"code":"drift","figure":"rss","message":"grew"}` {
		t.Errorf("JSON %s (%v)", b, err)
	}
}
