package fit

import (
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// FuzzParseAllocatable feeds --allocatable files, seeded with a document tare writes: an accepted one has
// cpu, memory and pods within capacity, and written back it reads the same.
func FuzzParseAllocatable(f *testing.F) {
	var b bytes.Buffer
	if err := sampleAllocatable().WriteYAML(&b); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Add([]byte(`{"apiVersion":"tare.dev/v1alpha1","kind":"MeasuredAllocatable","capacity":{"cpu":"2","memory":"8Gi","pods":"110"},"allocatable":{"cpu":"1900m","memory":"7Gi","pods":"110"}}`))
	f.Add([]byte("kind: MeasuredAllocatable\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		a, err := ParseAllocatable(doc)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
			c, al := a.Capacity[r], a.Allocatable[r]
			if al.Sign() < 0 || al.Cmp(c) > 0 {
				t.Fatalf("%s: allocatable %s, capacity %s accepted", r, al.String(), c.String())
			}
		}
		var out bytes.Buffer
		if err := a.WriteYAML(&out); err != nil {
			t.Fatal(err)
		}
		back, err := ParseAllocatable(out.Bytes())
		if err != nil {
			t.Fatalf("written back %q: %v", out.String(), err)
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
			x, y := a.Allocatable[r], back.Allocatable[r]
			if x.Cmp(y) != 0 {
				t.Fatalf("%s: %s read back as %s", r, x.String(), y.String())
			}
		}
	})
}
