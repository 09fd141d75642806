package generator_test

import "github.com/warrenbus/warren/generator/gogen"

// Every file the tests of this package generate is formatted by go/format
// as well, and generation fails where the layout gogen writes directly
// differs from it: goldens, examples, fuzzed schemas.
func init() { gogen.VerifyLayout = true }
