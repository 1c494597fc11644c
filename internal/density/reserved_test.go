package density

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// TestProviderReservations checks the formulas against the figures the providers and their users publish:
// an EKS m5.large (2 vCPU, 8 GiB, 29 pods) reserves 70m and 574Mi; a c5.24xlarge 310m of CPU; GKE keeps
// 1.7 GiB of a 7.5 GiB n1-standard-2 and 255Mi of a machine under 1 GiB; AKS reserves 20 MB x 30 pods +
// 50 MB = 650 MB of an 8 GB node, 25% of a 4 GB node with 70 pods (1000 MB, less than 1450), and 100m of
// CPU at 2 cores.
func TestProviderReservations(t *testing.T) {
	t.Parallel()
	const gib = 1 << 30
	get := func(cpus, mem float64, pods int, name string) Reservation {
		for _, r := range ProviderReservations(cpus, mem, pods) {
			if r.Name == name {
				return r
			}
		}
		t.Fatalf("no %s", name)
		return Reservation{}
	}
	for _, tc := range []struct {
		what          string
		got           Reservation
		cpu, memoryMi float64
	}{
		{"EKS m5.large", get(2, 8*gib, 29, "EKS"), 70, 574},
		{"EKS c5.24xlarge", get(96, 192*gib, 737, "EKS"), 310, 255 + 11*737},
		{"GKE n1-standard-2", get(2, 7.5*gib, 110, "GKE"), 70, 1.7 * 1024},
		{"GKE under 1 GiB", get(1, 0.6*gib, 110, "GKE"), 60, 255},
		{"GKE 32 GiB", get(8, 32*gib, 110, "GKE"), 60 + 10 + 10 + 4*2.5, (0.25*4 + 0.2*4 + 0.1*8 + 0.06*16) * 1024},
		{"AKS 8 GB, 30 pods", get(2, 8*gib, 30, "AKS"), 100, 650},
		{"AKS 4 GB, 70 pods", get(4, 4*gib, 70, "AKS"), 140, 1024},
		{"AKS 3 cores", get(3, 8*gib, 30, "AKS"), 100, 650},
		{"AKS 96 cores", get(96, 1024*gib, 250, "AKS"), 740, 5050},
	} {
		if math.Abs(tc.got.CPU-tc.cpu) > 1e-9 || math.Abs(tc.got.Memory/mib-tc.memoryMi) > 1e-6 {
			t.Errorf("%s: %.2fm, %.2f MiB; want %.2fm, %.2f MiB", tc.what, tc.got.CPU, tc.got.Memory/mib, tc.cpu, tc.memoryMi)
		}
	}
}

// TestKubeReserved: windows on an exact line (kubelet 10m + 0.5m a pod and 100 MiB of PSS, each shim
// 0.25m and 3 MiB) read at 110 pods give 92.5m and 760 MiB, mean and upper end alike; a group outside
// From is left out; one pod count gives no recommendation.
func TestKubeReserved(t *testing.T) {
	t.Parallel()
	var ws []Window
	for _, pods := range []int{0, 2, 4, 0, 4, 2} {
		n := float64(pods)
		ws = append(ws, Window{Step: Step{Pods: pods}, Groups: map[string]Cost{
			"kubelet":         {CPU: 10 + 0.5*n, PSS: 100 * mib},
			"containerd-shim": {CPU: 0.25 * n, PSS: 3 * mib * n},
			"pods":            {CPU: 1000, PSS: 1 << 30},
		}})
	}
	r := KubeReserved(ws, []string{"kubelet", "containerd-shim"}, 110, 2, 8<<30, 1)
	if r == nil {
		t.Fatal("no recommendation")
	}
	for _, x := range []Reservation{r.Measured, r.Mean} {
		if math.Abs(x.CPU-92.5) > 1e-9 || math.Abs(x.Memory-(100+330)*mib) > 1e-3 {
			t.Errorf("%s: %.3fm, %.3f MiB; want 92.5m, 430 MiB", x.Name, x.CPU, x.Memory/mib)
		}
	}
	if !r.Extrapolated || len(r.Providers) != 3 {
		t.Errorf("extrapolated %v, %d providers", r.Extrapolated, len(r.Providers))
	}
	var b bytes.Buffer
	if err := r.table(&b); err != nil || !strings.Contains(b.String(), "EKS") || !strings.Contains(b.String(), "+1035 MiB") {
		t.Errorf("table (%v):\n%s", err, b.String())
	}
	if KubeReserved(ws[:1], []string{"kubelet"}, 110, 2, 8<<30, 1) != nil || KubeReserved(ws, []string{"kubelet"}, 0, 2, 8<<30, 1) != nil {
		t.Error("a recommendation from one pod count, or for no pod limit")
	}
}
