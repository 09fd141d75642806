package schemaset

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Formats lists the formats that can be asserted, each checked as its
// specification says. Asking the generator to assert another one is an
// error there, not a silent no-op here.
// The suite's tests of each decide what "correctly" means
// (TestAssertedFormatsAgreeWithSuite). hostname, idn-hostname, idn-email,
// iri and iri-reference are not among them: checking them needs the IDNA
// tables, which the validator does not apply.
var Formats = []string{
	"date", "date-time", "duration", "email", "ipv4", "ipv6",
	"json-pointer", "regex", "relative-json-pointer", "time", "uri",
	"uri-reference", "uri-template", "uuid",
}

// knownFormats are the formats the validator library checks by itself;
// those not asserted are turned into annotations. ("regex" cannot be
// turned off: the library always checks it. It is a format people assert
// anyway.)
var knownFormats = []string{
	"date", "date-time", "duration", "email", "hostname", "ipv4", "ipv6",
	"iri", "iri-reference", "json-pointer", "period", "relative-json-pointer",
	"semver", "time", "uri", "uri-reference", "uri-template", "uuid",
}

// assertFormats makes the compiler check exactly the formats in assert.
// The library asserts formats always for drafts before 2019-09 and, once
// told to, for later ones: so it is told to, and every format not asked
// for is replaced by one that accepts everything.
func assertFormats(c *jsonschema.Compiler, assert []string) {
	c.AssertFormat()
	for _, name := range knownFormats {
		if !slices.Contains(assert, name) {
			c.RegisterFormat(&jsonschema.Format{Name: name, Validate: func(any) error { return nil }})
		}
	}
	// Where the library's own check is wrong, ours replaces or precedes
	// it. Its check of uri-template rejects valid templates such as
	// https://api.example.com/repos/o/r/issues{/number}.
	for name, check := range fixedFormats {
		if slices.Contains(assert, name) {
			c.RegisterFormat(&jsonschema.Format{Name: name, Validate: check})
		}
	}
}

var fixedFormats = map[string]func(any) error{
	"uri-template":  validateURITemplate,
	"uri":           func(v any) error { return cmpErr(validateURIChars(v, false), builtin("uri", v)) },
	"uri-reference": func(v any) error { return cmpErr(validateURIChars(v, true), builtin("uri-reference", v)) },
	"duration":      validateDuration,
	"regex":         validateRegex, // ECMA-262, as "pattern" (patterns.go)
	"email": func(v any) error {
		if s, ok := v.(string); ok && strings.HasPrefix(s, "@") {
			return errors.New("no local part before '@'")
		}
		return builtin("email", v)
	},
	"ipv4": func(v any) error {
		if s, ok := v.(string); ok && strings.Trim(s, "0123456789.") != "" {
			return errors.New("only digits and dots")
		}
		return builtin("ipv4", v)
	},
}

func cmpErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// builtins are the library's own checks, reached through a schema of
// their own (the library does not export them): the compiled schema's
// Format is the library's check of that format, called directly.
var builtins sync.Map // format name -> func(any) error

func builtin(name string, v any) error {
	check, ok := builtins.Load(name)
	if !ok {
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		if err := c.AddResource("warren:///format.json", map[string]any{"format": name}); err != nil {
			return err
		}
		compiled, err := c.Compile("warren:///format.json")
		if err != nil {
			return err
		}
		var fn func(any) error = func(any) error { return nil } // a format the library does not know
		if compiled.Format != nil {
			fn = compiled.Format.Validate
		}
		check, _ = builtins.LoadOrStore(name, fn)
	}
	return check.(func(any) error)(v)
}

// validateURIChars checks what the library's uri check lets through: every
// character must be one RFC 3986 allows (unreserved, reserved or a
// percent-encoding), square brackets only around an IP literal host, one
// '@' at most in the authority.
func validateURIChars(v any, reference bool) error {
	s, ok := v.(string)
	if !ok {
		return nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return errors.New("'%' not followed by two hex digits")
			}
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', strings.IndexByte("-._~:/?#[]@!$&'()*+,;=", c) >= 0:
		default:
			return fmt.Errorf("character %q is not allowed in a URI", c)
		}
	}
	rest := s
	if i := strings.Index(s, "//"); i >= 0 && (i == 0 || !reference || strings.Contains(s[:i], ":")) && !strings.ContainsAny(s[:i], "/?#") {
		authority := s[i+2:]
		if end := strings.IndexAny(authority, "/?#"); end >= 0 {
			authority, rest = authority[:end], authority[end:]
		} else {
			rest = ""
		}
		if strings.Count(authority, "@") > 1 {
			return errors.New("more than one '@' in the authority")
		}
		host := authority[strings.LastIndex(authority, "@")+1:]
		if strings.ContainsAny(host, "[]") && !(strings.HasPrefix(host, "[") && strings.Contains(host, "]")) {
			return errors.New("square brackets outside an IP literal")
		}
	}
	if strings.ContainsAny(rest, "[]") {
		return errors.New("square brackets outside the authority")
	}
	return nil
}

// durationRE is the grammar of RFC 3339 appendix A.
var durationRE = regexp.MustCompile(`^P(?:(?:[0-9]+D|[0-9]+M(?:[0-9]+D)?|[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?)(?:T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S))?|T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)|[0-9]+W)$`)

func validateDuration(v any) error {
	if s, ok := v.(string); ok && !durationRE.MatchString(s) {
		return errors.New("not an RFC 3339 duration")
	}
	return nil
}

// validateURITemplate checks a string against the URI Template grammar of
// RFC 6570 (level 4), section 2: literals, and expressions of an optional
// operator and comma-separated variables, each with an optional prefix
// length or explode modifier.
func validateURITemplate(v any) error {
	s, ok := v.(string)
	if !ok {
		return nil
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return errors.New("expression not closed with '}'")
			}
			if err := checkExpression(s[i+1 : i+end]); err != nil {
				return fmt.Errorf("expression %q: %w", s[i:i+end+1], err)
			}
			i += end + 1
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return fmt.Errorf("'%%' at %d is not followed by two hex digits", i)
			}
			i += 3
		case c == '}' || c <= ' ' || c == 0x7f || strings.IndexByte("\"<>\\^`|", c) >= 0:
			return fmt.Errorf("character %q at %d is not allowed in a literal", c, i)
		default:
			i++ // other ASCII and any UTF-8 byte (ucschar, iprivate)
		}
	}
	return nil
}

// checkExpression checks what is between '{' and '}'.
func checkExpression(e string) error {
	if e != "" && strings.IndexByte("+#./;?&=,!@|", e[0]) >= 0 {
		if strings.IndexByte("=,!@|", e[0]) >= 0 {
			return fmt.Errorf("operator %q is reserved", e[0])
		}
		e = e[1:]
	}
	if e == "" {
		return errors.New("no variable")
	}
	for _, spec := range strings.Split(e, ",") {
		name, mod := spec, ""
		if i := strings.IndexAny(spec, ":*"); i >= 0 {
			name, mod = spec[:i], spec[i:]
		}
		if err := checkVarname(name); err != nil {
			return err
		}
		switch {
		case mod == "" || mod == "*":
		case mod[0] == ':':
			n := mod[1:]
			if len(n) < 1 || len(n) > 4 || n[0] == '0' || strings.Trim(n, "0123456789") != "" {
				return fmt.Errorf("prefix %q: expected 1 to 4 digits, not starting with 0", mod)
			}
		default:
			return fmt.Errorf("modifier %q: expected ':' and a length, or '*'", mod)
		}
	}
	return nil
}

// checkVarname: varchar *( ["."] varchar ), varchar = ALPHA / DIGIT / "_"
// / pct-encoded.
func checkVarname(name string) error {
	if name == "" {
		return errors.New("empty variable name")
	}
	prevDot := true // a name cannot start with '.'
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '.':
			if prevDot {
				return fmt.Errorf("variable %q: misplaced '.'", name)
			}
			prevDot = true
			continue
		case c == '%':
			if i+2 >= len(name) || !isHex(name[i+1]) || !isHex(name[i+2]) {
				return fmt.Errorf("variable %q: '%%' not followed by two hex digits", name)
			}
			i += 2
		case c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		default:
			return fmt.Errorf("variable %q: character %q is not allowed", name, c)
		}
		prevDot = false
	}
	if prevDot {
		return fmt.Errorf("variable %q: ends with '.'", name)
	}
	return nil
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// FormatChecker returns the check of the format name that a Set asserting
// name applies: generated code checks with it (through codec.FormatOf), so
// that both agree.
func FormatChecker(name string) func(string) error {
	check, ok := fixedFormats[name]
	if !ok {
		check = func(v any) error { return builtin(name, v) }
	}
	return func(s string) error {
		err := check(s)
		if err == nil {
			return nil
		}
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			for len(ve.Causes) > 0 {
				ve = ve.Causes[0]
			}
			return errors.New(ve.ErrorKind.LocalizedString(printer))
		}
		return err
	}
}
