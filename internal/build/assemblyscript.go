package build

import (
	"context"
	"fmt"
)

// buildAssemblyScript is being written in this session (issue 3).
func buildAssemblyScript(ctx context.Context, dir, absOut string) error {
	return fmt.Errorf("building assemblyscript components is not implemented yet")
}
