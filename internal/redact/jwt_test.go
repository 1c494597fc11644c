package redact

import "testing"

// TestJWT: a JSON Web Token is masked whole wherever it stands; words that merely hold dots, or eyJ inside
// another word, stay.
func TestJWT(t *testing.T) {
	t.Parallel()
	const tok = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0YXJlIn0.c2lnbmF0dXJlX2J5dGVz"
	tests := []struct {
		name string
		in   []string
		want string
	}{
		{"a word", []string{"webhook", tok}, "webhook ***"},
		{"a header without a scheme", []string{"curl", "-H", "Authorization:" + tok}, "curl -H Authorization:***"},
		{"a flag's value", []string{"oidc", "--id-token-hint=" + tok}, "oidc --id-token-hint=***"},
		{"a flag's next word", []string{"webhook", "--header", tok}, "webhook --header ***"},
		{"after bearer", []string{"curl", "-H", "Authorization: Bearer " + tok}, "curl -H Authorization: Bearer ***"},
		{"in a fragment", []string{"open", "https://app/cb#id=" + tok + "&state=1"}, "open https://app/cb#id=***&state=1"},
		{"unsigned (alg none)", []string{"x", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0."}, "x ***"},
		{"JWE, five parts", []string{"x", "eyJhbGciOiJSU0EtT0FFUCJ9.a2V5.aXY.Y2lwaGVy.dGFn"}, "x ***"},
		{"in JSON", []string{"x", `{"jwt":"` + tok + `"}`}, `x {"jwt":"***"}`},
		{"dotted words stay", []string{"kubectl", "get", "deploy.apps", "v1.2.3", "a.b.c"}, "kubectl get deploy.apps v1.2.3 a.b.c"},
		{"eyJ inside a word stays", []string{"x", "monkeyJump.abcdef.ghijkl"}, "x monkeyJump.abcdef.ghijkl"},
		{"two segments stay", []string{"x", "eyJhbGciOiJIUzI1NiJ9.payload"}, "x eyJhbGciOiJIUzI1NiJ9.payload"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Join(tt.in); got != tt.want {
				t.Errorf("Join(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
