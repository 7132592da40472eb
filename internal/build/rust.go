package build

import (
	"context"
	"fmt"
)

// buildRust is being written in this session (issue 3).
func buildRust(ctx context.Context, dir, absOut string) error {
	return fmt.Errorf("building rust components is not implemented yet")
}
