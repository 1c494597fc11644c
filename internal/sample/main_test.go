package sample

import (
	"os"
	"testing"

	"github.com/tare-dev/tare/internal/testload"
)

// TestMain lets the test binary serve as the tests' helper processes: the calibrated CPU burners of
// testload, and the process whose memory map is locked (lockedhelper_test.go).
func TestMain(m *testing.M) {
	testload.Main()
	lockedHelperMain()
	os.Exit(m.Run())
}
