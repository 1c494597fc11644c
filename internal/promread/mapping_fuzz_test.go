package promread_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/model"

	"github.com/tare-dev/tare/internal/promread"
)

// FuzzMap feeds Map query results, seeded with the answers captured from the real Prometheus of
// TestReadRealPrometheus (testdata/twonodes). Map must not panic, and what it accepts has a node.
//
// The input is the results in a compact text form (one sample a line: query field, value, labels),
// not the API's JSON: decoding that JSON is the Prometheus client's work, not tare's, and it cost six
// times Map itself, which held the target to a few dozen inputs a second in the short fuzz pass.
func FuzzMap(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "twonodes", "CPUs.json"))
	if err != nil {
		f.Fatal(err)
	}
	cpus, err := decode(b)
	if err != nil {
		f.Fatal(err)
	}
	for name := range queryFields(promread.Queries{}) {
		b, err := os.ReadFile(filepath.Join("testdata", "twonodes", name+".json"))
		if err != nil {
			f.Fatal(err)
		}
		v, err := decode(b)
		if err != nil {
			f.Fatalf("%s: %v", name, err)
		}
		// Each query's answer with the nodes' CPUs (without which Map stops at ErrNoAgents), one seed
		// each: small inputs keep the minimizing of what the fuzzer finds short.
		one := promread.Results{CPUs: cpus}
		reflect.ValueOf(&one).Elem().FieldByName(name).Set(reflect.ValueOf(v))
		f.Add(encodeResults(one))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rep, err := promread.Map(decodeResults(b))
		if err == nil && len(rep.Nodes) == 0 {
			t.Fatalf("a report without nodes: %+v", rep)
		}
	})
}

// encodeResults writes results one sample a line: FIELD VALUE NAME=VALUE..., tab-separated, labels sorted.
func encodeResults(r promread.Results) []byte {
	var b bytes.Buffer
	v := reflect.ValueOf(r)
	for i := range v.NumField() {
		for _, s := range v.Field(i).Interface().(model.Vector) {
			fmt.Fprintf(&b, "%s\t%s", v.Type().Field(i).Name, strconv.FormatFloat(float64(s.Value), 'g', -1, 64))
			var labels []string
			for k, lv := range s.Metric {
				labels = append(labels, string(k)+"="+string(lv))
			}
			sort.Strings(labels)
			for _, l := range labels {
				b.WriteString("\t" + l)
			}
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// decodeResults reads what encodeResults writes, skipping lines it cannot read.
func decodeResults(b []byte) promread.Results {
	var r promread.Results
	rv := reflect.ValueOf(&r).Elem()
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, "\t")
		if len(f) < 2 {
			continue
		}
		field := rv.FieldByName(f[0])
		if !field.IsValid() {
			continue
		}
		x, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		m := model.Metric{}
		for _, l := range f[2:] {
			k, val, _ := strings.Cut(l, "=")
			m[model.LabelName(k)] = model.LabelValue(val)
		}
		field.Set(reflect.Append(field, reflect.ValueOf(&model.Sample{Metric: m, Value: model.SampleValue(x)})))
	}
	return r
}
