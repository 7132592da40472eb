package build

import (
	"context"
	"fmt"
)

// buildC is being written in this session (issue 3).
func buildC(ctx context.Context, dir, absOut string) error {
	return fmt.Errorf("building c components is not implemented yet")
}
