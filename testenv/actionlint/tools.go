//go:build tools

// Pins actionlint, the linter of .github/workflows/ (testenv/actionlint.ts builds it).
package tools

import (
	_ "github.com/rhysd/actionlint/cmd/actionlint"
)
