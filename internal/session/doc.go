// Package session runs one measuring session: it opens the sampler, builds the measurement's metadata (tare's
// version, the window, its start, whether it was interrupted, the caller's notes), samples the window with
// sample.Loop, and hands every sample to sinks as it is taken: a recording (record), the live status line
// (progress), or anything else that implements Sink; and, when it traced block I/O (blockio), the window's to
// each sink that is a BlockIOSink. It keeps every sample in memory, collects the warnings of the window, each
// with the sample it arose in, and reports a sink that failed apart from the errors that stop the
// measurement, so a broken recording never costs the measurement itself.
//
// The measure, explain and experiment verbs call it; it is the only place a window is sampled.
//
// It imports sample (the sampler), record (the recording sink), progress (the status line sink), blockio
// (the block I/O tracer) and bpfstats (the BPF programs whose time it reports). A new destination for samples is a Sink of its own, in the package it belongs
// to; a new fact of every measurement goes in the metadata built here.
//
// Imports: blockio, bpfstats, progress, record, sample
package session
