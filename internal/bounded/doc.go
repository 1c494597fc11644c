// Package bounded reads what network peers send within a size bound: an agent's /summary, the API server's
// metrics and pod lists, a component's pprof profile, Prometheus' answers. A peer that sends more, broken
// or hostile, ends the read with an error naming the peer and the bound, rather than making tare allocate
// without end or parse a body cut short.
//
// It imports only output (the bound's size in messages), so any package may use it. Every body tare
// reads from a network peer is read through it, with a timeout from the caller's context or client.
//
// Imports: output
package bounded
