//go:build !linux

package outdir

import "errors"

// syncFS is unavailable here: files are synced one by one (syncEach). A
// variable for the tests.
var syncFS = func(string, int64) error { return errors.ErrUnsupported }
