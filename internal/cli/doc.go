// Package cli wires tare's verbs (cobra commands) to the domain packages. Every verb is a function of a
// context, arguments and streams, so tests run the whole CLI in-process. It holds no measurement logic.
package cli
