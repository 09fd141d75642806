package secret

import (
	"reflect"
	"strings"
)

// Message headers are the producer's: a service that forwards an HTTP
// request's headers puts its Authorization or Cookie in them. Printed or
// exported, they are output, and the values of those that carry
// credentials are masked; the messages themselves keep them.

// credentialWords mark a header name, anywhere in it, as a credential's.
var credentialWords = []string{
	"authorization", "cookie", "password", "passwd", "passphrase", "secret", "token",
	"credential", "apikey", "api-key", "private-key", "access-key", "session-id", "sessionid",
}

// credentialParts mark a header name as a credential's when one of the
// parts of the name (between "-", "_", "." or " ") is exactly one of them:
// too short to look for inside other words ("x-author" is no credential).
var credentialParts = []string{"auth", "pwd", "pass", "session", "jwt", "signature"}

// CredentialName reports whether a header's name says its value is a
// credential: authorization, proxy-authorization, cookie, set-cookie,
// password, passwd, secret, token, credentials, api-key, apikey,
// x-api-key and the like, case-insensitive, with "_" read as "-"; also
// any name with "token", "secret", "password", "credential", "cookie"
// or "authorization" in it (x-auth-token, db_password, client-secret),
// and any whose parts include auth, pwd, pass, session, jwt or
// signature (x-auth, x-hub-signature).
func CredentialName(name string) bool {
	n := strings.NewReplacer("_", "-", ".", "-", " ", "-").Replace(strings.ToLower(name))
	for _, w := range credentialWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	for _, part := range strings.Split(n, "-") {
		for _, p := range credentialParts {
			if part == p {
				return true
			}
		}
	}
	return false
}

// Headers returns a copy of h to print or export: the value of every
// header whose name [CredentialName] matches is [Mask], in nested tables
// too, and every other text value is passed through [Text] (a URL's
// password, a "password=" keyword). h itself is not changed. Nested
// tables come back as map[string]any, lists as []any.
func Headers(h map[string]any) map[string]any {
	if h == nil {
		return nil
	}
	out := make(map[string]any, len(h))
	for k, v := range h {
		if CredentialName(k) {
			out[k] = Mask
			continue
		}
		out[k] = headerValue(v)
	}
	return out
}

// headerValue is v with the credentials in it masked.
func headerValue(v any) any {
	switch v := v.(type) {
	case string:
		return Text(v)
	case map[string]any:
		return Headers(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = headerValue(e)
		}
		return out
	case nil, bool, int, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64, []byte:
		return v
	}
	// A table of the AMQP library's own type (amqp.Table, a
	// map[string]any of another name), which this package does not import.
	if r := reflect.ValueOf(v); r.Kind() == reflect.Map && r.Type().Key().Kind() == reflect.String {
		m := make(map[string]any, r.Len())
		for it := r.MapRange(); it.Next(); {
			m[it.Key().String()] = it.Value().Interface()
		}
		return Headers(m)
	}
	return v
}
