package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/ardea-dev/ardea/internal/natsauth"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// newServerCmd is `ardea server`: one node of a cluster of daemons.
func newServerCmd(g *globalFlags) *cobra.Command {
	var df daemonFlags
	var cl daemon.Cluster
	var secretFile string
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run one node of an Ardea cluster (ardea local over a NATS cluster with replicated JetStream)",
		Long: `Run the Ardea daemon as one node of a cluster: its embedded NATS server
joins the other nodes' (--routes) over authenticated routes, and JetStream
keeps --replicas copies of every bucket (topologies, plans, checkpoints,
dead letters, tokens, quotas, the tenants' accounts), so the cluster loses
no data with a node. Every node serves the API and the UI with the same
tokens; the first node to start writes the admin token to its data dir.

Every node is started with the same secret (--cluster-secret-file, mode
0600; 'ardea server secret' makes one): the keys of the NATS accounts, the
routes' password and the CA of the routes' TLS derive from it, so it never
appears on a command line. The routes are TLS with both ends verified:
each node issues itself short-lived certificates from the derived CA, so
a node without the secret can neither join nor read them. With your own
PKI, --cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca replace the
derived CA (on every node).

Without --routes, 'ardea server' is 'ardea local': a daemon alone.
See docs/deploy.md.`,
		Example: `  ardea server secret --out /etc/ardea/cluster.secret
  ardea server --name n1 --data-dir /var/lib/ardea --listen 0.0.0.0:7780 \
    --nats-listen 0.0.0.0:4222 --cluster-listen 0.0.0.0:6222 \
    --routes nats://n1:6222,nats://n2:6222,nats://n3:6222 \
    --cluster-secret-file /etc/ardea/cluster.secret`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(cl.Routes) == 0 {
				for _, f := range []string{"cluster-listen", "nats-listen", "cluster-secret-file", "replicas",
					"cluster-tls-cert", "cluster-tls-key", "cluster-tls-ca", "cluster-tls-server-name"} {
					if cmd.Flags().Changed(f) {
						return usageError{fmt.Errorf("--%s: only with --routes (a node alone is 'ardea local')", f)}
					}
				}
				return runDaemon(cmd, g, "ardea server", &df, nil)
			}
			if secretFile == "" {
				return usageError{fmt.Errorf("--cluster-secret-file: required with --routes (make one with 'ardea server secret --out FILE')")}
			}
			s, err := natsauth.ReadSecret(secretFile)
			if err != nil {
				return usageError{err}
			}
			cl.Secret = []byte(s.String())
			return runDaemon(cmd, g, "ardea server", &df, &cl)
		},
	}
	positional(cmd)
	df.add(cmd)
	cmd.Flags().StringVar(&cl.Name, "name", "", "this node's name, unique in the cluster (default: the host name)")
	cmd.Flags().StringVar(&cl.NATSListen, "nats-listen", "127.0.0.1:0", "NATS client address this node's containers connect to (port 0: a free one)")
	cmd.Flags().StringVar(&cl.ClusterListen, "cluster-listen", "127.0.0.1:0", "NATS route address the other nodes connect to (port 0: a free one)")
	cmd.Flags().StringSliceVar(&cl.Routes, "routes", nil, "the nodes' route URLs, comma separated (nats://host:port; this node's own may be among them)")
	cmd.Flags().StringVar(&secretFile, "cluster-secret-file", "", "file (mode 0600) holding the cluster's shared secret")
	cmd.Flags().IntVar(&cl.Replicas, "replicas", daemon.DefaultReplicas, "copies of every bucket over the nodes (1 to 5)")
	cmd.Flags().StringVar(&cl.TLSCert, "cluster-tls-cert", "", "this node's route certificate (PEM; for server and client authentication) from your own PKI, instead of the CA derived from the cluster secret")
	cmd.Flags().StringVar(&cl.TLSKey, "cluster-tls-key", "", "the key of --cluster-tls-cert (PEM, mode 0600)")
	cmd.Flags().StringVar(&cl.TLSCA, "cluster-tls-ca", "", "the CA certificates (PEM) every node's route certificate is checked against, with --cluster-tls-cert")
	cmd.Flags().StringVar(&cl.TLSServerName, "cluster-tls-server-name", "", "the name every node's route certificate carries, with --cluster-tls-cert (default: the route URL's host)")
	cmd.AddCommand(newServerSecretCmd())
	return cmd
}

func newServerSecretCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "secret",
		Short: "Make a cluster secret for 'ardea server --cluster-secret-file'",
		Long: `Write a new random cluster secret to --out with mode 0600. Start every
node of one cluster with the same file. Anyone with it can join a node to
the cluster and sign NATS credentials: keep it like a private key.`,
		Example: `  ardea server secret --out cluster.secret`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usageError{fmt.Errorf("--out: required (the secret is never printed)")}
			}
			if _, err := os.Stat(out); err == nil {
				return usageError{fmt.Errorf("--out %s: exists; remove it first (every node must keep the same secret)", out)}
			}
			if err := natsauth.NewSecret().WriteFile(out); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cluster secret written to %s (mode 0600)\n", out)
			return nil
		},
	}
	positional(cmd)
	cmd.Flags().StringVar(&out, "out", "", "file to write (mode 0600)")
	return cmd
}
