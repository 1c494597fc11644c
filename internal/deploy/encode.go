package deploy

import (
	"encoding/json"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/tare-dev/tare/internal/output"
)

// WriteYAML writes objs as one multi-document YAML stream, what `kubectl apply -f -` reads. Fields a
// client never sets (status, a null creationTimestamp) are left out.
func WriteYAML(w io.Writer, objs []runtime.Object) error {
	for i, obj := range objs {
		m, err := manifestFields(obj)
		if err != nil {
			return err
		}
		b, err := yaml.Marshal(m)
		if err != nil {
			return fmt.Errorf("encoding %s as YAML: %w", kindOf(obj), err)
		}
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// WriteJSON writes objs as one indented JSON v1 List, as `kubectl get -o json` prints several objects;
// `kubectl apply -f -` reads it too.
func WriteJSON(w io.Writer, objs []runtime.Object) error {
	list := corev1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}}
	for _, obj := range objs {
		m, err := manifestFields(obj)
		if err != nil {
			return err
		}
		raw, err := json.Marshal(m)
		if err != nil {
			return err
		}
		list.Items = append(list.Items, runtime.RawExtension{Raw: raw})
	}
	m, err := manifestFields(&list)
	if err != nil {
		return err
	}
	return output.JSON(w, m)
}

// manifestFields is obj as generic JSON fields without what only the server fills in: its status and
// null values (ObjectMeta's zero creationTimestamp marshals as null).
func manifestFields(obj runtime.Object) (map[string]any, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", kindOf(obj), err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("encoding %s: %w", kindOf(obj), err)
	}
	delete(m, "status")
	dropNulls(m)
	return m, nil
}

// dropNulls removes null values from every object nested in v.
func dropNulls(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if e == nil {
				delete(v, k)
				continue
			}
			dropNulls(e)
		}
	case []any:
		for _, e := range v {
			dropNulls(e)
		}
	}
}

func kindOf(obj runtime.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	return fmt.Sprintf("%T", obj)
}
