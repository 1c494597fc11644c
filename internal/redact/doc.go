// Package redact removes secrets (tokens, passwords, keys, bearer credentials) from command lines and log
// text before tare shows or stores them. Every output path of tare passes command lines through it.
package redact
