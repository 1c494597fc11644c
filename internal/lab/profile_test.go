package lab

import (
	"slices"
	"strings"
	"testing"
)

func TestParseSet(t *testing.T) {
	got, err := ParseSet("kube-apiserver.max-requests-inflight=100")
	if err != nil || got != (Tuning{Component: "kube-apiserver", Flag: "max-requests-inflight", Value: "100", Reason: "--set"}) {
		t.Fatalf("ParseSet = %+v, %v", got, err)
	}
	if got, err := ParseSet("kubelet.--v=4"); err != nil || got.Flag != "v" || got.Value != "4" {
		t.Errorf("leading dashes: %+v, %v", got, err)
	}
	if got, err := ParseSet("etcd.log-level="); err != nil || got.Value != "" {
		t.Errorf("empty value: %+v, %v", got, err)
	}
	for _, bad := range []string{"kube-apiserver", "kube-apiserver.v", "nope.v=1", ".v=1", "kubelet.=1", "kubelet.a b=1"} {
		if _, err := ParseSet(bad); err == nil || !strings.Contains(err.Error(), "COMPONENT.FLAG=VALUE") {
			t.Errorf("ParseSet(%q) = %v, want an error saying the form", bad, err)
		}
	}
}

func TestApplyTunings(t *testing.T) {
	args := []string{"--a", "1", "--leader-elect=true", "--b=2", "--profiling"}
	ts := []Tuning{
		{Component: "kube-scheduler", Flag: "leader-elect", Value: "false"},
		{Component: "kube-scheduler", Flag: "a", Value: "3"},
		{Component: "kube-scheduler", Flag: "profiling", Value: "false"},
		{Component: "kube-scheduler", Flag: "new", Value: "x"},
		{Component: "etcd", Flag: "b", Value: "9"},
		{Component: "kube-scheduler", Flag: "a", Value: "4"}, // later wins
	}
	got := applyTunings("kube-scheduler", args, ts)
	want := []string{"--b=2", "--leader-elect=false", "--profiling=false", "--new=x", "--a=4"}
	if !slices.Equal(got, want) {
		t.Errorf("applyTunings = %q, want %q", got, want)
	}
	if !slices.Equal(args, []string{"--a", "1", "--leader-elect=true", "--b=2", "--profiling"}) {
		t.Errorf("applyTunings changed its input: %q", args)
	}
}

func TestProfiles(t *testing.T) {
	up, err := ProfileTunings(ProfileUpstream)
	if err != nil || len(up) != 0 {
		t.Errorf("upstream changes nothing: %v, %v", up, err)
	}
	tu, err := ProfileTunings(ProfileTuned)
	if err != nil || len(tu) == 0 {
		t.Fatalf("tuned: %v, %v", tu, err)
	}
	for _, x := range tu {
		if x.Reason == "" || !slices.Contains(labComponents, x.Component) {
			t.Errorf("tuning %s lacks a reason or names an unknown component", x)
		}
	}
	if _, err := ProfileTunings("fast"); err == nil {
		t.Error("unknown profile accepted")
	}
}
