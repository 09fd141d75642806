package gogen

// Layout is layout, for the tests of package gogen_test.
var Layout = layout

// LayoutReusing returns layout working in one scratch kept from call to
// call, as each of Generate's goroutines lays out its files.
func LayoutReusing() func([]byte) ([]byte, bool) { return new(scratch).layout }

// Files the tests generate are formatted by go/format as well, and compared.
func init() { VerifyLayout = true }
