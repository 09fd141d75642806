package gogen

// Layout is layout, for the tests of package gogen_test.
var Layout = layout

// Files the tests generate are formatted by go/format as well, and compared.
func init() { VerifyLayout = true }
