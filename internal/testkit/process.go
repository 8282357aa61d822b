package testkit

import (
	"context"
	"io"
	"os/exec"

	"github.com/ctalk/ctalk/internal/mcpclient"
)

// Process is a ctalk server in a child process; see mcpclient.Process.
type Process = mcpclient.Process

// StartProcess starts cmd and returns once the server logs its address;
// see mcpclient.StartProcess.
func StartProcess(ctx context.Context, cmd *exec.Cmd, log io.Writer) (*Process, error) {
	return mcpclient.StartProcess(ctx, cmd, log)
}
