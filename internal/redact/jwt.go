package redact

import (
	"regexp"
	"strings"
)

// jwt matches a JSON Web Token wherever it is (a bare word, Authorization:eyJ…, --id-token-hint=eyJ…):
// base64url segments separated by dots, the first a JSON header ({" encodes as eyJ), then at least two more
// (header.payload.signature; the signature is empty for alg none, a JWE has five). A token is a bearer
// credential whatever the name before it, so the whole token is masked. Unpadded base64url is the rule, but
// the + and / of standard base64 and a stray = at a segment's end are tolerated: some issuers get it wrong.
var jwt = regexp.MustCompile(`\beyJ[A-Za-z0-9_+/-]{4,}=*\.[A-Za-z0-9_+/-]{2,}=*(\.[A-Za-z0-9_+/-]*=*)+`)

// maskJWT masks the JSON Web Tokens in s. Text without "eyJ" (nearly all) does not reach the expression.
func maskJWT(s string) string {
	if !strings.Contains(s, "eyJ") {
		return s
	}
	return jwt.ReplaceAllString(s, Mask)
}
