package experiment

import (
	"errors"
	"strings"
	"testing"
)

// The labs' memory check, on this machine's meminfo (captured with 16 labs running: 18.5 GiB
// available): 16 more labs fit, 40 do not, and the refusal says how many would; one lab is never checked,
// and a proc root without meminfo stops nothing.
func TestCheckMemory(t *testing.T) {
	if err := checkMemory("testdata/proc", 16); err != nil {
		t.Errorf("16 labs in 18.5 GiB: %v", err)
	}
	err := checkMemory("testdata/proc", 40)
	if err == nil || !errors.Is(err, ErrStart) || !strings.Contains(err.Error(), "at most 37 replicas") || !strings.Contains(err.Error(), "18.5 GiB available") {
		t.Errorf("40 labs in 18.5 GiB: %v", err)
	}
	if err := memoryFits(1, 0); err == nil {
		t.Errorf("memoryFits(1, 0): one lab in no memory fits")
	}
	if err := checkMemory("testdata/proc", 1); err != nil {
		t.Errorf("one lab: %v", err)
	}
	if err := checkMemory(t.TempDir(), 40); err != nil {
		t.Errorf("no meminfo: %v", err)
	}
}
