package sample

import (
	"context"
	"testing"
	"time"
)

// BenchmarkSample measures one sample of this machine (CPU path only; detail reads every 50th sample).
func BenchmarkSample(b *testing.B) {
	s, err := New(context.Background(), Options{Interval: 100 * time.Millisecond, Detail: 5 * time.Second}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Sample(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Sample(); err != nil {
			b.Fatal(err)
		}
	}
}
