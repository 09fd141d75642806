package golden_test

import (
	"testing"

	"github.com/warrenbus/warren/internal/testenv"
)

// The package's test vhosts are made several at a time and deleted
// together at the end (testenv.Main).
func TestMain(m *testing.M) { testenv.Main(m) }
