// Copyright (c) gpunet.rdma contributors
// GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
// SPDX-License-Identifier: GPL-3.0-or-later

// VMware's vCenter simulator (govmomi's simulator package, Debian's golang-github-vmware-govmomi-dev) with its
// default inventory (datacenter DC0, cluster DC0_C0 with three ESXi hosts, VMs with a NIC on the distributed port
// group DC0_DVPG0) and a second port group, DC0_DVPG1, for the PVRDMA adapters; it serves the vSphere API over HTTPS
// on a free port of 127.0.0.1 until SIGTERM. The ESXi hosts also know the advanced option Net.PVRDMAVmknic (a string,
// empty by default), which real ESXi 6.5 and later have and the simulator's settings list lacks; their firewall has
// ESXi's pvrdma ruleset (from the simulator's recorded ESXi data), disabled as on a fresh ESXi.
// The simulator keeps one copy of the advanced options and of the firewall rulesets for all its hosts.
// Writes the SDK URL (with the user and password) to the file given as the only argument once it answers.
package main

import (
	"crypto/tls"
	"fmt"
	"io/ioutil"
	"os"
	"os/signal"
	"syscall"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/simulator/esx"
	"github.com/vmware/govmomi/vim25/types"
)

const pvrdmaVmknic = "Net.PVRDMAVmknic"

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: vcsim URL_FILE")
		os.Exit(2)
	}
	esx.Setting = append(esx.Setting, &types.OptionValue{Key: pvrdmaVmknic, Value: ""})
	for i := range esx.HostFirewallInfo.Ruleset {
		if esx.HostFirewallInfo.Ruleset[i].Key == "pvrdma" {
			esx.HostFirewallInfo.Ruleset[i].Enabled = false
		}
	}
	model := simulator.VPX()
	model.Portgroup = 2
	defer model.Remove()
	if err := model.Create(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, entity := range simulator.Map.All("HostSystem") {
		host := entity.(*simulator.HostSystem)
		options := simulator.Map.Get(*host.ConfigManager.AdvancedOption).(*simulator.OptionManager)
		options.SupportedOption = append(options.SupportedOption, types.OptionDef{
			ElementDescription: types.ElementDescription{
				Key:         pvrdmaVmknic,
				Description: types.Description{Label: "PVRDMA vmknic", Summary: "Vmknic for PVRDMA"},
			},
			OptionType: &types.StringOption{DefaultValue: ""},
		})
	}
	model.Service.TLS = new(tls.Config)
	server := model.Service.NewServer()
	defer server.Close()
	if err := ioutil.WriteFile(os.Args[1], []byte(server.URL.String()+"\n"), 0600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	<-stop
}
