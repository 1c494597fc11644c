package output

import (
	"encoding/json"
	"io"
)

// JSON writes v to w as JSON indented by two spaces, ending in a newline: the format of every -o json.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
