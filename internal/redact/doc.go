// Package redact removes secrets (tokens, passwords, keys, bearer credentials, JSON Web Tokens) from command
// lines and log text before tare shows or stores them. Every output path of tare passes command lines
// through it: Join for an argv, Text for free text; Args is Join's words.
//
// It imports nothing of tare's, so every package that prints or stores text may use it. Where things are:
// names.go says which flag and variable names carry a secret and whether a flag takes the next word as its
// value; redact.go holds the rules over words and text (flags, pairs, URLs, bearer credentials); jwt.go the
// tokens; clients.go the programs whose flags carry passwords in their own way (mysql's -p, redis-cli's -a,
// curl's -u, a registry login's -p); line.go cuts free text into words. A new kind of secret is a rule with a
// case in its file's table test and a generator in shapes_test.go, whose fuzz target plants random secrets
// in every known shape.
//
// When a rule cannot tell a secret from something else, it masks: a flag's name hidden, or a word after a
// switch, costs a reader little; a secret in every table, recording and /summary costs much more.
//
// Imports: none
package redact
