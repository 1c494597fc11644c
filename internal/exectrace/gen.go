package exectrace

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go@v0.22.0 -cc clang -cflags "-O2 -g -Wall -Werror" -no-global-types -type event exectrace exectrace.bpf.c
