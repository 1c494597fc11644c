package cli

import (
	"io"

	"github.com/tare-dev/tare/internal/output"
)

// rendered is a result that prints as a table or as JSON (a summary, explain's report, an experiment's
// results, what a lab verb did).
type rendered interface {
	JSON(io.Writer) error
	Table(io.Writer) error
}

// render prints r as -o asks. Every verb's result goes through here, so -o means the same everywhere.
func render(s streams, g *globalOptions, r rendered) error {
	if g.output == "json" {
		return r.JSON(s.out)
	}
	return r.Table(s.out)
}

// view renders a value that has no table of its own: as indented JSON, or as table draws it.
type view[T any] struct {
	v     T
	table func(io.Writer, T) error
}

// viewOf is v rendered as indented JSON, or as a table drawn by table.
func viewOf[T any](v T, table func(io.Writer, T) error) rendered { return view[T]{v: v, table: table} }

func (v view[T]) JSON(w io.Writer) error  { return output.JSON(w, v.v) }
func (v view[T]) Table(w io.Writer) error { return v.table(w, v.v) }

// checkTop refuses a --top that would show no rows (the summary would silently show its default).
func checkTop(n int) error {
	if n < 1 {
		return usageError("--top %d: want 1 or more table rows (-o json always holds every process)", n)
	}
	return nil
}
