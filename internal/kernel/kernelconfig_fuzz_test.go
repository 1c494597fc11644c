package kernel

import (
	"bytes"
	"testing"
)

// FuzzParseKernelConfig fuzzes the parser of the kernel's build configuration.
func FuzzParseKernelConfig(f *testing.F) {
	seedFiles(f, "seeds/config", "hosts/bootconfig/boot/*")
	f.Fuzz(func(t *testing.T, b []byte) {
		kc := parseKernelConfig(b)
		if kc.HZ < 0 || kc.HZ > 100000 {
			t.Fatalf("HZ %d", kc.HZ)
		}
		if kc.HZ > 0 && !bytes.Contains(b, []byte("CONFIG_HZ=")) {
			t.Fatalf("HZ %d from a file without CONFIG_HZ", kc.HZ)
		}
		if kc.IRQTimeAccounting && !bytes.Contains(b, []byte("CONFIG_IRQ_TIME_ACCOUNTING=y")) {
			t.Fatal("IRQ time accounting from a file without CONFIG_IRQ_TIME_ACCOUNTING=y")
		}
	})
}
