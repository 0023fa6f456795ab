// Copyright 2026 The Paygate Authors.
// SPDX-License-Identifier: Apache-2.0

package controlplane

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ControllerManagerBinary is kube-controller-manager's file name in the assets directory.
const ControllerManagerBinary = "kube-controller-manager"

// controllerManagerControllers are the only controllers kube-controller-manager runs: the garbage
// collector follows ownerReferences, the namespace controller empties and removes deleted
// namespaces. Nothing else (no pods, no nodes, no service account tokens) is needed here.
const controllerManagerControllers = "garbage-collector-controller,namespace-controller"

// How long kube-controller-manager may take to answer its health check and then to cascade a
// deletion, and to end when asked.
const (
	controllerManagerStartTimeout = 90 * time.Second
	controllerManagerStopTimeout  = 15 * time.Second
)

// controllerManager is a running kube-controller-manager.
type controllerManager struct {
	cmd *exec.Cmd
	// dir holds its kubeconfig, its serving certificate and (unless logged elsewhere) its log;
	// stop removes it.
	dir     string
	logPath string
	logFile *os.File
	// done is closed when the process has exited; waitErr is its exit status then.
	done    chan struct{}
	waitErr error
}

// startControllerManager starts bin with only the garbage collector and the namespace
// controller, as a cluster administrator of env's kube-apiserver, serving its health checks on
// loopback only, and returns once it has cascaded a deletion. logPath, when set, receives its
// log; else the log is kept in a temporary file removed by stop.
func startControllerManager(ctx context.Context, bin string, env *envtest.Environment, cfg *rest.Config, logPath string) (_ *controllerManager, retErr error) {
	dir, err := os.MkdirTemp("", "paygate-kube-controller-manager-")
	if err != nil {
		return nil, fmt.Errorf("creating kube-controller-manager's directory: %w", err)
	}
	m := &controllerManager{dir: dir, logPath: logPath, done: make(chan struct{})}
	defer func() {
		if retErr != nil {
			retErr = errors.Join(retErr, m.stop())
		}
	}()
	user, err := env.AddUser(envtest.User{Name: "system:kube-controller-manager", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("adding kube-controller-manager's user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("rendering kube-controller-manager's kubeconfig: %w", err)
	}
	kubeconfigPath := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		return nil, fmt.Errorf("writing kube-controller-manager's kubeconfig: %w", err)
	}
	port, err := freeLoopbackPort()
	if err != nil {
		return nil, fmt.Errorf("finding a port for kube-controller-manager: %w", err)
	}
	if m.logPath == "" {
		m.logPath = filepath.Join(dir, "kube-controller-manager.log")
	} else if err := os.MkdirAll(filepath.Dir(m.logPath), 0o700); err != nil {
		return nil, fmt.Errorf("creating the directory of kube-controller-manager's log: %w", err)
	}
	if m.logFile, err = os.Create(m.logPath); err != nil {
		return nil, fmt.Errorf("creating kube-controller-manager's log: %w", err)
	}

	m.cmd = exec.Command(bin,
		"--kubeconfig="+kubeconfigPath,
		"--controllers="+controllerManagerControllers,
		"--leader-elect=false",
		// Health checks only, on loopback, with a self-signed certificate kept in dir.
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		"--cert-dir="+filepath.Join(dir, "certs"),
		// The API server is local: a cascade or a namespace deletion need not wait for the
		// client's default rate limit.
		"--kube-api-qps=200",
		"--kube-api-burst=400",
	)
	m.cmd.Stdout, m.cmd.Stderr = m.logFile, m.logFile
	m.cmd.SysProcAttr = sysProcAttr()
	if err := m.cmd.Start(); err != nil {
		m.cmd = nil
		return nil, fmt.Errorf("starting kube-controller-manager: %w", err)
	}
	go func() {
		m.waitErr = m.cmd.Wait()
		close(m.done)
	}()

	ctx, cancel := context.WithTimeout(ctx, controllerManagerStartTimeout)
	defer cancel()
	if err := m.waitHealthy(ctx, port); err != nil {
		return nil, fmt.Errorf("starting kube-controller-manager: %w%s", err, m.logTail())
	}
	if err := m.waitCascade(ctx, cfg); err != nil {
		return nil, fmt.Errorf("starting kube-controller-manager: %w%s", err, m.logTail())
	}
	return m, nil
}

// exited reports the process's exit as an error, or nil while it runs.
func (m *controllerManager) exited() error {
	select {
	case <-m.done:
		return fmt.Errorf("kube-controller-manager exited: %v", m.waitErr)
	default:
		return nil
	}
}

// waitHealthy polls kube-controller-manager's /healthz until it answers 200.
func (m *controllerManager) waitHealthy(ctx context.Context, port int) error {
	c := &http.Client{
		Timeout: 2 * time.Second,
		// Its certificate is self-signed, and the address is loopback.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // loopback health check
	}
	defer c.CloseIdleConnections()
	url := "https://127.0.0.1:" + strconv.Itoa(port) + "/healthz"
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := c.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if err := m.exited(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer 200 within %s", url, controllerManagerStartTimeout)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitCascade proves both controllers work: in a namespace of its own it deletes a ConfigMap
// owned by another and waits for the garbage collector to delete the dependent, then deletes the
// namespace and waits for the namespace controller to remove it.
func (m *controllerManager) waitCascade(ctx context.Context, cfg *rest.Config) error {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "paygate-controlplane-probe-"}}
	if err := c.Create(ctx, ns); err != nil {
		return fmt.Errorf("creating the probe namespace: %w", err)
	}
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "owner"}}
	if err := c.Create(ctx, owner); err != nil {
		return fmt.Errorf("creating the probe's owner: %w", err)
	}
	dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "dependent",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}}}
	if err := c.Create(ctx, dependent); err != nil {
		return fmt.Errorf("creating the probe's dependent: %w", err)
	}
	if err := c.Delete(ctx, owner); err != nil {
		return fmt.Errorf("deleting the probe's owner: %w", err)
	}
	if err := m.waitGone(ctx, c, dependent, "the garbage collector did not delete a dependent of a deleted owner"); err != nil {
		return err
	}
	if err := c.Delete(ctx, ns); err != nil {
		return fmt.Errorf("deleting the probe namespace: %w", err)
	}
	return m.waitGone(ctx, c, ns, "the namespace controller did not remove a deleted namespace")
}

// waitGone polls until obj is not found; what names the failure when it does not go.
func (m *controllerManager) waitGone(ctx context.Context, c client.Client, obj client.Object, what string) error {
	for {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err := m.exited(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s within %s", what, controllerManagerStartTimeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// logTail is the end of the log, to quote in an error.
func (m *controllerManager) logTail() string {
	b, err := os.ReadFile(m.logPath)
	if err != nil || len(b) == 0 {
		return ""
	}
	const keep = 4096
	if len(b) > keep {
		b = b[len(b)-keep:]
	}
	return "\nthe end of its log (" + m.logPath + "):\n" + strings.TrimSpace(string(b))
}

// stop ends the process (SIGTERM, then SIGKILL if it lingers), waits for it and removes its
// directory. It may be called more than once.
func (m *controllerManager) stop() error {
	var errs []error
	if m.cmd != nil {
		select {
		case <-m.done:
		default:
			_ = m.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-m.done:
			case <-time.After(controllerManagerStopTimeout):
				if err := m.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
					errs = append(errs, fmt.Errorf("killing kube-controller-manager: %w", err))
				}
				<-m.done
			}
		}
		m.cmd = nil
	}
	if m.logFile != nil {
		if err := m.logFile.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing kube-controller-manager's log: %w", err))
		}
		m.logFile = nil
	}
	if m.dir != "" {
		if err := os.RemoveAll(m.dir); err != nil {
			errs = append(errs, fmt.Errorf("removing kube-controller-manager's directory: %w", err))
		}
		m.dir = ""
	}
	return errors.Join(errs...)
}

// freeLoopbackPort asks the kernel for a free TCP port on 127.0.0.1.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
