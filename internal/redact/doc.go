// Package redact removes secrets (tokens, passwords, keys, bearer credentials) from command lines and log
// text before tare shows or stores them. Every output path of tare passes command lines through it.
//
// It imports nothing of tare's, so every package that prints or stores text may use it. A new kind of
// secret is a rule in redact.go with a case in its table test; a program whose flags carry secrets in its
// own way (as mysql's -p does) goes in clients.go.
package redact
