package lab

import (
	"os"
	"strings"
	"testing"
)

// A directory that holds no lab is never touched by Down; a corrupt state is reported as such.
func TestDownLeavesOtherDirectoriesAlone(t *testing.T) {
	dir := t.TempDir()
	keep := dir + "/precious.txt"
	if err := os.WriteFile(keep, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Down(t.Context(), dir, false); err == nil || !strings.Contains(err.Error(), "no lab in") {
		t.Errorf("Down on a plain directory: %v", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("Down removed a file of a directory that held no lab: %v", err)
	}
	if err := os.WriteFile(statePath(dir), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadState(dir); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("loadState on a corrupt file: %v", err)
	}
	if err := os.WriteFile(statePath(dir), []byte(`{"version": 99}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadState(dir); err == nil || !strings.Contains(err.Error(), "newer tare") {
		t.Errorf("loadState on a newer state: %v", err)
	}
}
