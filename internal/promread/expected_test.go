package promread_test

import (
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tare-dev/tare/internal/promread"
)

// twoNodes is the report of promtest.TwoNodes, worked out by hand from the rates the fake agents advance
// their counters at (see promtest.TwoNodes); groups busiest first.
var twoNodes = promread.Report{
	Nodes: []promread.Node{
		{Name: "n1", CPUs: 2, BusyCores: 0.75, BusyPercent: 37.5, OverheadCores: 0.43, KubeletRuntimeCores: 0.2, TareCores: 0.01,
			Groups: []promread.Group{
				{Name: "burner", Kind: "pod", CPUCores: 0.25},
				{Name: "etcd", Kind: "component", CPUCores: 0.2},
				{Name: "kubelet", Kind: "component", CPUCores: 0.15,
					Memory: map[string]int64{"rss": 50 << 20, "pss": 40 << 20, "private": 30 << 20}},
				{Name: "containerd", Kind: "component", CPUCores: 0.05},
				{Name: "kernel", Kind: "kernel", CPUCores: 0.02},
				{Name: "tare", Kind: "self", CPUCores: 0.01, Memory: map[string]int64{"rss": 20 << 20}},
			}},
		{Name: "n2", CPUs: 4, BusyCores: 0.3, BusyPercent: 7.5, OverheadCores: 0.2, KubeletRuntimeCores: 0.08,
			Groups: []promread.Group{
				{Name: "kube-apiserver", Kind: "component", CPUCores: 0.12},
				{Name: "kubelet", Kind: "component", CPUCores: 0.08},
				{Name: "coredns-1", Kind: "pod", CPUCores: 0.04},
			}},
	},
	Cluster: promread.Cluster{Nodes: 2, BusyCores: 1.05, OverheadCores: 0.63, ControlPlaneCores: 0.32,
		Pods: []promread.Pod{
			{Node: "n1", Namespace: "default", Pod: "burner", CPUCores: 0.25},
			{Node: "n2", Namespace: "kube-system", Pod: "coredns-1", CPUCores: 0.04},
		}},
}

// within5 compares reports with every figure within 5% of the other (and within 0.001 cores of zero),
// ignoring where and when they were read.
var within5 = cmp.Options{
	cmpopts.EquateApprox(0.05, 0.001),
	cmpopts.IgnoreFields(promread.Report{}, "Prometheus", "Window", "Time", "Top", "Warnings"),
	cmpopts.EquateEmpty(),
}
