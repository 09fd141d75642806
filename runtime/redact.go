package runtime

import (
	"net/url"
	"strings"
)

// redactURL returns raw with its password replaced by "xxxxx". A string
// that does not parse as a URL is not shown at all, since it may be mostly
// password.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparseable URL>"
	}
	return u.Redacted()
}

// secretsOf returns the passwords in urls, for scrubbing error text that a
// dependency might have built from a URL.
func secretsOf(urls []string) []string {
	var secrets []string
	for _, raw := range urls {
		if u, err := url.Parse(raw); err == nil {
			if p, ok := u.User.Password(); ok && p != "" {
				secrets = append(secrets, p, url.QueryEscape(p), url.PathEscape(p))
			}
		}
	}
	return secrets
}

// redactedError hides secrets in the text of an error while keeping the
// chain intact for errors.Is and errors.As.
type redactedError struct {
	err     error
	secrets []string
}

func redactErr(err error, secrets []string) error {
	if err == nil || len(secrets) == 0 {
		return err
	}
	return &redactedError{err: err, secrets: secrets}
}

func (e *redactedError) Error() string {
	s := e.err.Error()
	for _, p := range e.secrets {
		s = strings.ReplaceAll(s, p, "xxxxx")
	}
	return s
}

func (e *redactedError) Unwrap() error { return e.err }
