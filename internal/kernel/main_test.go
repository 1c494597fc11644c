package kernel

import (
	"os"
	"testing"

	"github.com/tare-dev/tare/internal/testload"
)

// TestMain lets the test binary serve as the tests' helper processes (testload's modes).
func TestMain(m *testing.M) {
	testload.Main()
	os.Exit(m.Run())
}
