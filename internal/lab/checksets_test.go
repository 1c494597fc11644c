package lab

import (
	"strings"
	"testing"

	"github.com/tare-dev/tare/internal/testenv"
)

// TestCheckSets asks the installed components for their --help: a real flag passes, a misspelt one is named.
func TestCheckSets(t *testing.T) {
	if testing.Short() {
		t.Skip("runs installed components' --help")
	}
	if err := CheckInstalled("", true); err != nil {
		testenv.Unavailable(t, "the lab is not installed (tare lab install): %v", err)
	}
	good := []Tuning{{Component: "kube-scheduler", Flag: "leader-elect", Value: "false"}, {Component: "etcd", Flag: "snapshot-count", Value: "1000"}}
	if err := CheckSets(t.Context(), "", good); err != nil {
		t.Errorf("real flags: %v", err)
	}
	bad := append(good, Tuning{Component: "kube-apiserver", Flag: "max-request-inflight", Value: "10"})
	if err := CheckSets(t.Context(), "", bad); err == nil || !strings.Contains(err.Error(), "kube-apiserver has no flag --max-request-inflight") {
		t.Errorf("misspelt flag: %v", err)
	}
}
