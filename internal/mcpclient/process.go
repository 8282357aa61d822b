package mcpclient

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"
)

// Process is a ctalk server in a child process.
type Process struct {
	// URL is http://host:port, from the server's "ctalk listening" line.
	URL  string
	Cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartProcess starts cmd, copies its standard error to log line by line
// and returns once the server logs "ctalk listening" with its address. When
// it exits first, or ctx ends first, it is killed and the error says so.
func StartProcess(ctx context.Context, cmd *exec.Cmd, log io.Writer) (*Process, error) {
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the server process: %w", err)
	}
	p := &Process{Cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			log.Write(append(sc.Bytes(), '\n'))
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "ctalk listening" {
				select {
				case addr <- line.Addr:
				default:
				}
			}
		}
		io.Copy(log, stderr)
		p.err = cmd.Wait()
		close(p.done)
	}()
	select {
	case a := <-addr:
		p.URL = "http://" + a
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("the server process exited before listening: %v", p.err)
	case <-ctx.Done():
	}
	p.Kill()
	return nil, fmt.Errorf("the server process did not announce its address: %w", ctx.Err())
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the process's exit status, once Done is closed.
func (p *Process) Err() error { return p.err }

// Wait waits up to d for the process to exit and returns its exit status,
// or an error saying that it did not exit.
func (p *Process) Wait(d time.Duration) (exited bool, err error) {
	select {
	case <-p.done:
		return true, p.err
	case <-time.After(d):
		return false, fmt.Errorf("the server process did not exit within %s", d)
	}
}

// Kill kills the process, if it still runs, and waits until it is gone.
func (p *Process) Kill() {
	select {
	case <-p.done:
	default:
		p.Cmd.Process.Kill()
		<-p.done
	}
}

// Stop sends SIGTERM and waits up to d for the process to exit, then kills
// it; it returns the exit status.
func (p *Process) Stop(d time.Duration) error {
	p.Cmd.Process.Signal(syscall.SIGTERM)
	if exited, err := p.Wait(d); exited {
		return err
	}
	p.Kill()
	return fmt.Errorf("the server process did not exit within %s of SIGTERM", d)
}
