# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared state of the lab's firmware test doubles (mlxconfig, mlxfwmanager, mlxfwreset, mst, lab-reboot).

One JSON file per PCI function in <lab root>/firmware/<pci>.json (its MST
name, its firmware image). The non-volatile configuration belongs to the
adapter, not to a PCI function: the functions of one adapter (same
domain:bus:device, 0000:5e:00.0 and 0000:5e:00.1 of a dual-port card) share
it, and it is kept in the file of the adapter's lowest function - each
parameter's Default / Current / Next Boot as numbers (array parameters one
number per element) and the order the card prints them in. A set through any
function is seen through every other; a simulated firmware reset (of any
function) or a reboot copies Next Boot to Current for the whole adapter and
starts the burned image on all its functions, as mlxfwreset resets the
device with all its functions. The flash (mlxfwmanager's burn) is the
adapter's too. Every call is appended to <lab root>/firmware/calls.log so
tests can count sets, resets and reboots.

The parameters of a simulated card are those a real card of its generation
printed (CATALOGS, each from a recorded query), plus the few parameters its
hardware profile sets explicitly; what each parameter takes (a boolean, the
names of an enum, the width of a number, the length of an array) comes from
mstflint's parameter database (FIELDS), so the doubles refuse what the real
tools refuse.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile

LAB_ROOT = os.environ.get('GPUNET_LAB_ROOT', os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STATE_DIR = os.path.join(LAB_ROOT, 'firmware')
MST_DIR = os.environ.get('GPUNET_LAB_MST_DIR', '/dev/mst')
_PCI_RE = re.compile(r'^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$')
_PRINTED_NUMBER_RE = re.compile(r'\((\d+)\)$')
# mlxconfig's exit codes (mlxconfig/mlxcfg_status.h): MLX_CFG_ABORTED and MLX_CFG_ERROR.
RC_ABORTED, RC_ERROR = 2, 3
U32_MAX = 0xFFFFFFFF

SOURCE_CX4LX = ('mstconfig q of a ConnectX-4 Lx (CX4121A), linux-rdma list, 2019-07-01, "RDMA on Mellanox '
                'ConnectX-4 Lx cannot work" (lore.kernel.org/linux-rdma/'
                '13dde97d-77a7-7663-1766-068082342e05@gmail.com)')
SOURCE_CX5 = ('mlxconfig q of a ConnectX-5 Ex (MCX516A-CDA, firmware 16.27.2008), xdp-newbies list, 2020-06-19, '
              '"CQ error on CQN 0x43e, syndrome 0x1" (lore.kernel.org/xdp-newbies/'
              'CAFqFp6EL0xUsmTK3yRa01C40+FZr6Dh+5W8Ek759wxbF96knPw@mail.gmail.com)')
SOURCE_CX6DX = ('mstconfig -d 4b:00.0 q of a ConnectX-6 Dx (MCX623432AN-ADA), the full dump of public notes on '
                'disabling RoCE: the 6th-generation list; the ConnectX-6 VPI profiles add LINK_TYPE_P1 explicitly')

# The parameters of each simulated generation, in the order a real card of that generation printed them, with the
# value it printed (the doubles print the names of the values from FIELDS, as current tools do).
CATALOGS = {
    'ConnectX4LX': (
        SOURCE_CX4LX,
        'MEMIC_BAR_SIZE=0 MEMIC_SIZE_LIMIT=_256KB(1) ROCE_NEXT_PROTOCOL=254 NON_PREFETCHABLE_PF_BAR=False(0) '
        'NUM_OF_VFS=8 SRIOV_EN=True(1) PF_LOG_BAR_SIZE=5 VF_LOG_BAR_SIZE=0 NUM_PF_MSIX=63 NUM_VF_MSIX=11 '
        'INT_LOG_MAX_PAYLOAD_SIZE=AUTOMATIC(0) SW_RECOVERY_ON_ERRORS=False(0) RESET_WITH_HOST_ON_ERRORS=False(0) '
        'CQE_COMPRESSION=BALANCED(0) IP_OVER_VXLAN_EN=False(0) LRO_LOG_TIMEOUT0=6 LRO_LOG_TIMEOUT1=7 '
        'LRO_LOG_TIMEOUT2=8 LRO_LOG_TIMEOUT3=13 LOG_DCR_HASH_TABLE_SIZE=14 DCR_LIFO_SIZE=16384 '
        'ROCE_CC_PRIO_MASK_P1=255 ROCE_CC_ALGORITHM_P1=ECN(0) ROCE_CC_PRIO_MASK_P2=255 '
        'ROCE_CC_ALGORITHM_P2=ECN(0) CLAMP_TGT_RATE_AFTER_TIME_INC_P1=True(1) CLAMP_TGT_RATE_P1=False(0) '
        'RPG_TIME_RESET_P1=300 RPG_BYTE_RESET_P1=32767 RPG_THRESHOLD_P1=1 RPG_MAX_RATE_P1=0 RPG_AI_RATE_P1=5 '
        'RPG_HAI_RATE_P1=50 RPG_GD_P1=11 RPG_MIN_DEC_FAC_P1=50 RPG_MIN_RATE_P1=1 RATE_TO_SET_ON_FIRST_CNP_P1=0 '
        'DCE_TCP_G_P1=1019 DCE_TCP_RTT_P1=1 RATE_REDUCE_MONITOR_PERIOD_P1=4 INITIAL_ALPHA_VALUE_P1=1023 '
        'MIN_TIME_BETWEEN_CNPS_P1=0 CNP_802P_PRIO_P1=6 CNP_DSCP_P1=48 CLAMP_TGT_RATE_AFTER_TIME_INC_P2=True(1) '
        'CLAMP_TGT_RATE_P2=False(0) RPG_TIME_RESET_P2=300 RPG_BYTE_RESET_P2=32767 RPG_THRESHOLD_P2=1 '
        'RPG_MAX_RATE_P2=0 RPG_AI_RATE_P2=5 RPG_HAI_RATE_P2=50 RPG_GD_P2=11 RPG_MIN_DEC_FAC_P2=50 '
        'RPG_MIN_RATE_P2=1 RATE_TO_SET_ON_FIRST_CNP_P2=0 DCE_TCP_G_P2=1019 DCE_TCP_RTT_P2=1 '
        'RATE_REDUCE_MONITOR_PERIOD_P2=4 INITIAL_ALPHA_VALUE_P2=1023 MIN_TIME_BETWEEN_CNPS_P2=0 '
        'CNP_802P_PRIO_P2=6 CNP_DSCP_P2=48 LLDP_NB_DCBX_P1=False(0) LLDP_NB_RX_MODE_P1=OFF(0) '
        'LLDP_NB_TX_MODE_P1=OFF(0) LLDP_NB_DCBX_P2=False(0) LLDP_NB_RX_MODE_P2=OFF(0) LLDP_NB_TX_MODE_P2=OFF(0) '
        'DCBX_IEEE_P1=True(1) DCBX_CEE_P1=True(1) DCBX_WILLING_P1=True(1) DCBX_IEEE_P2=True(1) '
        'DCBX_CEE_P2=True(1) DCBX_WILLING_P2=True(1) KEEP_ETH_LINK_UP_P1=True(1) KEEP_IB_LINK_UP_P1=False(0) '
        'KEEP_LINK_UP_ON_BOOT_P1=False(0) KEEP_LINK_UP_ON_STANDBY_P1=False(0) KEEP_ETH_LINK_UP_P2=True(1) '
        'KEEP_IB_LINK_UP_P2=False(0) KEEP_LINK_UP_ON_BOOT_P2=False(0) KEEP_LINK_UP_ON_STANDBY_P2=False(0) '
        'NUM_OF_VL_P1=_4_VLs(3) NUM_OF_TC_P1=_8_TCs(0) NUM_OF_PFC_P1=8 NUM_OF_VL_P2=_4_VLs(3) '
        'NUM_OF_TC_P2=_8_TCs(0) NUM_OF_PFC_P2=8 DUP_MAC_ACTION_P1=LAST_CFG(0) SRIOV_IB_ROUTING_MODE_P1=True(1) '
        'IB_ROUTING_MODE_P1=LID(1) DUP_MAC_ACTION_P2=LAST_CFG(0) SRIOV_IB_ROUTING_MODE_P2=True(1) '
        'IB_ROUTING_MODE_P2=LID(1) PCI_WR_ORDERING=per_mkey(0) MULTI_PORT_VHCA_EN=False(0) PORT_OWNER=True(1) '
        'ALLOW_RD_COUNTERS=True(1) RENEG_ON_CHANGE=True(1) TRACER_ENABLE=True(1) IP_VER=IPv4(0) '
        'UEFI_HII_EN=False(0) BOOT_VLAN=1 LEGACY_BOOT_PROTOCOL=PXE(1) BOOT_RETRY_CNT=NONE(0) '
        'BOOT_LACP_DIS=True(1) BOOT_VLAN_EN=False(0) BOOT_PKEY=0 BOOT_DBG_LOG=False(0) UEFI_LOGS=DISABLED(0) '
        'EXP_ROM_UEFI_ARM_ENABLE=False(0) EXP_ROM_UEFI_x86_ENABLE=False(0) EXP_ROM_PXE_ENABLE=True(1) '
        'ADVANCED_PCI_SETTINGS=False(0)'),
    'ConnectX5': (
        SOURCE_CX5,
        'MEMIC_BAR_SIZE=0 MEMIC_SIZE_LIMIT=_256KB(1) HOST_CHAINING_MODE=DISABLED(0) '
        'HOST_CHAINING_DESCRIPTORS=Array[0..7] HOST_CHAINING_TOTAL_BUFFER_SIZE=Array[0..7] '
        'FLEX_PARSER_PROFILE_ENABLE=0 FLEX_IPV4_OVER_VXLAN_PORT=0 ROCE_NEXT_PROTOCOL=254 '
        'ESWITCH_HAIRPIN_DESCRIPTORS=Array[0..7] ESWITCH_HAIRPIN_TOT_BUFFER_SIZE=Array[0..7] PF_BAR2_SIZE=0 '
        'NON_PREFETCHABLE_PF_BAR=False(0) VF_VPD_ENABLE=False(0) STRICT_VF_MSIX_NUM=False(0) '
        'VF_NODNIC_ENABLE=False(0) NUM_OF_VFS=6 PF_BAR2_ENABLE=False(0) SRIOV_EN=True(1) PF_LOG_BAR_SIZE=5 '
        'VF_LOG_BAR_SIZE=1 NUM_PF_MSIX=63 NUM_VF_MSIX=11 INT_LOG_MAX_PAYLOAD_SIZE=AUTOMATIC(0) '
        'PCIE_CREDIT_TOKEN_TIMEOUT=0 PARTIAL_RESET_EN=False(0) SW_RECOVERY_ON_ERRORS=False(0) '
        'RESET_WITH_HOST_ON_ERRORS=False(0) ADVANCED_POWER_SETTINGS=False(0) CQE_COMPRESSION=BALANCED(0) '
        'IP_OVER_VXLAN_EN=False(0) MKEY_BY_NAME=False(0) ESWITCH_IPV4_TTL_MODIFY_ENABLE=False(0) '
        'PRIO_TAG_REQUIRED_EN=False(0) UCTX_EN=False(0) '
        'PCI_ATOMIC_MODE=PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0) TUNNEL_ECN_COPY_DISABLE=False(0) '
        'LRO_LOG_TIMEOUT0=6 LRO_LOG_TIMEOUT1=7 LRO_LOG_TIMEOUT2=8 LRO_LOG_TIMEOUT3=13 LOG_DCR_HASH_TABLE_SIZE=11 '
        'DCR_LIFO_SIZE=16384 ROCE_CC_PRIO_MASK_P1=255 ROCE_CC_ALGORITHM_P1=ECN(0) ROCE_CC_PRIO_MASK_P2=255 '
        'ROCE_CC_ALGORITHM_P2=ECN(0) CLAMP_TGT_RATE_AFTER_TIME_INC_P1=True(1) CLAMP_TGT_RATE_P1=False(0) '
        'RPG_TIME_RESET_P1=300 RPG_BYTE_RESET_P1=32767 RPG_THRESHOLD_P1=1 RPG_MAX_RATE_P1=0 RPG_AI_RATE_P1=5 '
        'RPG_HAI_RATE_P1=50 RPG_GD_P1=11 RPG_MIN_DEC_FAC_P1=50 RPG_MIN_RATE_P1=1 RATE_TO_SET_ON_FIRST_CNP_P1=0 '
        'DCE_TCP_G_P1=1019 DCE_TCP_RTT_P1=1 RATE_REDUCE_MONITOR_PERIOD_P1=4 INITIAL_ALPHA_VALUE_P1=1023 '
        'MIN_TIME_BETWEEN_CNPS_P1=2 CNP_802P_PRIO_P1=6 CNP_DSCP_P1=48 CLAMP_TGT_RATE_AFTER_TIME_INC_P2=True(1) '
        'CLAMP_TGT_RATE_P2=False(0) RPG_TIME_RESET_P2=300 RPG_BYTE_RESET_P2=32767 RPG_THRESHOLD_P2=1 '
        'RPG_MAX_RATE_P2=0 RPG_AI_RATE_P2=5 RPG_HAI_RATE_P2=50 RPG_GD_P2=11 RPG_MIN_DEC_FAC_P2=50 '
        'RPG_MIN_RATE_P2=1 RATE_TO_SET_ON_FIRST_CNP_P2=0 DCE_TCP_G_P2=1019 DCE_TCP_RTT_P2=1 '
        'RATE_REDUCE_MONITOR_PERIOD_P2=4 INITIAL_ALPHA_VALUE_P2=1023 MIN_TIME_BETWEEN_CNPS_P2=2 '
        'CNP_802P_PRIO_P2=6 CNP_DSCP_P2=48 LLDP_NB_DCBX_P1=False(0) LLDP_NB_RX_MODE_P1=OFF(0) '
        'LLDP_NB_TX_MODE_P1=OFF(0) LLDP_NB_DCBX_P2=False(0) LLDP_NB_RX_MODE_P2=OFF(0) LLDP_NB_TX_MODE_P2=OFF(0) '
        'DCBX_IEEE_P1=True(1) DCBX_CEE_P1=True(1) DCBX_WILLING_P1=True(1) DCBX_IEEE_P2=True(1) '
        'DCBX_CEE_P2=True(1) DCBX_WILLING_P2=True(1) KEEP_ETH_LINK_UP_P1=True(1) KEEP_IB_LINK_UP_P1=False(0) '
        'KEEP_LINK_UP_ON_BOOT_P1=False(0) KEEP_LINK_UP_ON_STANDBY_P1=False(0) KEEP_ETH_LINK_UP_P2=True(1) '
        'KEEP_IB_LINK_UP_P2=False(0) KEEP_LINK_UP_ON_BOOT_P2=False(0) KEEP_LINK_UP_ON_STANDBY_P2=False(0) '
        'NUM_OF_VL_P1=_4_VLs(3) NUM_OF_TC_P1=_8_TCs(0) NUM_OF_PFC_P1=8 NUM_OF_VL_P2=_4_VLs(3) '
        'NUM_OF_TC_P2=_8_TCs(0) NUM_OF_PFC_P2=8 DUP_MAC_ACTION_P1=LAST_CFG(0) SRIOV_IB_ROUTING_MODE_P1=LID(1) '
        'IB_ROUTING_MODE_P1=LID(1) DUP_MAC_ACTION_P2=LAST_CFG(0) SRIOV_IB_ROUTING_MODE_P2=LID(1) '
        'IB_ROUTING_MODE_P2=LID(1) PCI_WR_ORDERING=per_mkey(0) MULTI_PORT_VHCA_EN=False(0) PORT_OWNER=True(1) '
        'ALLOW_RD_COUNTERS=True(1) RENEG_ON_CHANGE=True(1) TRACER_ENABLE=True(1) IP_VER=IPv4(0) '
        'BOOT_UNDI_NETWORK_WAIT=0 UEFI_HII_EN=False(0) BOOT_DBG_LOG=False(0) UEFI_LOGS=DISABLED(0) BOOT_VLAN=1 '
        'LEGACY_BOOT_PROTOCOL=PXE(1) BOOT_INTERRUPT_DIS=False(0) BOOT_LACP_DIS=True(1) BOOT_VLAN_EN=False(0) '
        'BOOT_PKEY=0 ATS_ENABLED=False(0) DYNAMIC_VF_MSIX_TABLE=False(0) EXP_ROM_UEFI_x86_ENABLE=False(0) '
        'EXP_ROM_PXE_ENABLE=True(1) ADVANCED_PCI_SETTINGS=False(0) SAFE_MODE_THRESHOLD=10 '
        'SAFE_MODE_ENABLE=True(1)'),
    'ConnectX6': (
        SOURCE_CX6DX,
        'MEMIC_BAR_SIZE=0 MEMIC_SIZE_LIMIT=_256KB(1) HOST_CHAINING_MODE=DISABLED(0) '
        'HOST_CHAINING_CACHE_DISABLE=False(0) HOST_CHAINING_DESCRIPTORS=Array[0..7] '
        'HOST_CHAINING_TOTAL_BUFFER_SIZE=Array[0..7] FLEX_PARSER_PROFILE_ENABLE=0 PROG_PARSE_GRAPH=False(0) '
        'FLEX_IPV4_OVER_VXLAN_PORT=0 ROCE_NEXT_PROTOCOL=254 ESWITCH_HAIRPIN_DESCRIPTORS=Array[0..7] '
        'ESWITCH_HAIRPIN_TOT_BUFFER_SIZE=Array[0..7] PF_BAR2_SIZE=0 PF_NUM_OF_VF_VALID=False(0) '
        'NON_PREFETCHABLE_PF_BAR=False(0) VF_VPD_ENABLE=False(0) PF_NUM_PF_MSIX_VALID=False(0) '
        'PER_PF_NUM_SF=False(0) STRICT_VF_MSIX_NUM=False(0) VF_NODNIC_ENABLE=False(0) NUM_PF_MSIX_VALID=True(1) '
        'NUM_OF_VFS=0 NUM_OF_PF=2 PF_BAR2_ENABLE=False(0) SRIOV_EN=False(0) PF_LOG_BAR_SIZE=5 VF_LOG_BAR_SIZE=0 '
        'NUM_PF_MSIX=63 NUM_VF_MSIX=11 INT_LOG_MAX_PAYLOAD_SIZE=AUTOMATIC(0) PCIE_CREDIT_TOKEN_TIMEOUT=0 '
        'LAG_RESOURCE_ALLOCATION=DEVICE_DEFAULT(0) PHY_COUNT_LINK_UP_DELAY=DELAY_NONE(0) '
        'ACCURATE_TX_SCHEDULER=False(0) PARTIAL_RESET_EN=False(0) RESET_WITH_HOST_ON_ERRORS=False(0) '
        'PCI_SWITCH_EMULATION_NUM_PORT=16 PCI_SWITCH_EMULATION_ENABLE=False(0) '
        'PCI_DOWNSTREAM_PORT_OWNER=Array[0..15] CQE_COMPRESSION=BALANCED(0) IP_OVER_VXLAN_EN=False(0) '
        'MKEY_BY_NAME=False(0) PRIO_TAG_REQUIRED_EN=False(0) UCTX_EN=True(1) REAL_TIME_CLOCK_ENABLE=False(0) '
        'RDMA_SELECTIVE_REPEAT_EN=False(0) PCI_ATOMIC_MODE=PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED(0) '
        'TUNNEL_ECN_COPY_DISABLE=False(0) LRO_LOG_TIMEOUT0=6 LRO_LOG_TIMEOUT1=7 LRO_LOG_TIMEOUT2=8 '
        'LRO_LOG_TIMEOUT3=13 LOG_TX_PSN_WINDOW=7 LOG_MAX_OUTSTANDING_WQE=7 '
        'TUNNEL_IP_PROTO_ENTROPY_DISABLE=False(0) ICM_CACHE_MODE=DEVICE_DEFAULT(0) TLS_OPTIMIZE=False(0) '
        'TX_SCHEDULER_BURST=0 ZERO_TOUCH_TUNING_ENABLE=False(0) ROCE_CC_LEGACY_DCQCN=True(1) LOG_MAX_QUEUE=17 '
        'LOG_DCR_HASH_TABLE_SIZE=11 MAX_PACKET_LIFETIME=0 DCR_LIFO_SIZE=16384 ROCE_CC_PRIO_MASK_P1=255 '
        'ROCE_CC_PRIO_MASK_P2=255 CLAMP_TGT_RATE_AFTER_TIME_INC_P1=True(1) CLAMP_TGT_RATE_P1=False(0) '
        'RPG_TIME_RESET_P1=300 RPG_BYTE_RESET_P1=32767 RPG_THRESHOLD_P1=1 RPG_MAX_RATE_P1=0 RPG_AI_RATE_P1=5 '
        'RPG_HAI_RATE_P1=50 RPG_GD_P1=11 RPG_MIN_DEC_FAC_P1=50 RPG_MIN_RATE_P1=1 RATE_TO_SET_ON_FIRST_CNP_P1=0 '
        'DCE_TCP_G_P1=1019 DCE_TCP_RTT_P1=1 RATE_REDUCE_MONITOR_PERIOD_P1=4 INITIAL_ALPHA_VALUE_P1=1023 '
        'MIN_TIME_BETWEEN_CNPS_P1=4 CNP_802P_PRIO_P1=6 CNP_DSCP_P1=48 CLAMP_TGT_RATE_AFTER_TIME_INC_P2=True(1) '
        'CLAMP_TGT_RATE_P2=False(0) RPG_TIME_RESET_P2=300 RPG_BYTE_RESET_P2=32767 RPG_THRESHOLD_P2=1 '
        'RPG_MAX_RATE_P2=0 RPG_AI_RATE_P2=5 RPG_HAI_RATE_P2=50 RPG_GD_P2=11 RPG_MIN_DEC_FAC_P2=50 '
        'RPG_MIN_RATE_P2=1 RATE_TO_SET_ON_FIRST_CNP_P2=0 DCE_TCP_G_P2=1019 DCE_TCP_RTT_P2=1 '
        'RATE_REDUCE_MONITOR_PERIOD_P2=4 INITIAL_ALPHA_VALUE_P2=1023 MIN_TIME_BETWEEN_CNPS_P2=4 '
        'CNP_802P_PRIO_P2=6 CNP_DSCP_P2=48 LLDP_NB_DCBX_P1=False(0) LLDP_NB_RX_MODE_P1=OFF(0) '
        'LLDP_NB_TX_MODE_P1=OFF(0) LLDP_NB_DCBX_P2=False(0) LLDP_NB_RX_MODE_P2=OFF(0) LLDP_NB_TX_MODE_P2=OFF(0) '
        'ROCE_RTT_RESP_DSCP_P1=0 ROCE_RTT_RESP_DSCP_MODE_P1=DEVICE_DEFAULT(0) ROCE_RTT_RESP_DSCP_P2=0 '
        'ROCE_RTT_RESP_DSCP_MODE_P2=DEVICE_DEFAULT(0) DCBX_IEEE_P1=True(1) DCBX_CEE_P1=True(1) '
        'DCBX_WILLING_P1=True(1) DCBX_IEEE_P2=True(1) DCBX_CEE_P2=True(1) DCBX_WILLING_P2=True(1) '
        'KEEP_ETH_LINK_UP_P1=True(1) KEEP_IB_LINK_UP_P1=False(0) KEEP_LINK_UP_ON_BOOT_P1=False(0) '
        'KEEP_LINK_UP_ON_STANDBY_P1=False(0) DO_NOT_CLEAR_PORT_STATS_P1=False(0) '
        'AUTO_POWER_SAVE_LINK_DOWN_P1=False(0) KEEP_ETH_LINK_UP_P2=True(1) KEEP_IB_LINK_UP_P2=False(0) '
        'KEEP_LINK_UP_ON_BOOT_P2=False(0) KEEP_LINK_UP_ON_STANDBY_P2=False(0) '
        'DO_NOT_CLEAR_PORT_STATS_P2=False(0) AUTO_POWER_SAVE_LINK_DOWN_P2=False(0) NUM_OF_VL_P1=_4_VLs(3) '
        'NUM_OF_TC_P1=_8_TCs(0) NUM_OF_PFC_P1=8 VL15_BUFFER_SIZE_P1=0 NUM_OF_VL_P2=_4_VLs(3) '
        'NUM_OF_TC_P2=_8_TCs(0) NUM_OF_PFC_P2=8 VL15_BUFFER_SIZE_P2=0 DUP_MAC_ACTION_P1=LAST_CFG(0) '
        'MPFS_MC_LOOPBACK_DISABLE_P1=False(0) MPFS_UC_LOOPBACK_DISABLE_P1=False(0) '
        'UNKNOWN_UPLINK_MAC_FLOOD_P1=False(0) SRIOV_IB_ROUTING_MODE_P1=LID(1) IB_ROUTING_MODE_P1=LID(1) '
        'DUP_MAC_ACTION_P2=LAST_CFG(0) MPFS_MC_LOOPBACK_DISABLE_P2=False(0) MPFS_UC_LOOPBACK_DISABLE_P2=False(0) '
        'UNKNOWN_UPLINK_MAC_FLOOD_P2=False(0) SRIOV_IB_ROUTING_MODE_P2=LID(1) IB_ROUTING_MODE_P2=LID(1) '
        'PHY_FEC_OVERRIDE_P1=DEVICE_DEFAULT(0) PHY_FEC_OVERRIDE_P2=DEVICE_DEFAULT(0) WOL_MAGIC_EN=True(1) '
        'PF_TOTAL_SF=0 PF_SF_BAR_SIZE=0 PF_NUM_PF_MSIX=63 ROCE_CONTROL=ROCE_ENABLE(2) '
        'PCI_WR_ORDERING=per_mkey(0) MULTI_PORT_VHCA_EN=False(0) PORT_OWNER=True(1) ALLOW_RD_COUNTERS=True(1) '
        'RENEG_ON_CHANGE=True(1) TRACER_ENABLE=True(1) IP_VER=IPv4(0) BOOT_UNDI_NETWORK_WAIT=0 '
        'UEFI_HII_EN=True(1) BOOT_DBG_LOG=False(0) UEFI_LOGS=DISABLED(0) BOOT_VLAN=1 LEGACY_BOOT_PROTOCOL=PXE(1) '
        'BOOT_INTERRUPT_DIS=False(0) BOOT_LACP_DIS=True(1) BOOT_VLAN_EN=False(0) BOOT_PKEY=0 '
        'P2P_ORDERING_MODE=DEVICE_DEFAULT(0) ATS_ENABLED=False(0) DYNAMIC_VF_MSIX_TABLE=False(0) '
        'EXP_ROM_UEFI_ARM_ENABLE=True(1) EXP_ROM_UEFI_x86_ENABLE=True(1) EXP_ROM_PXE_ENABLE=True(1) '
        'ADVANCED_PCI_SETTINGS=False(0) SAFE_MODE_THRESHOLD=10 SAFE_MODE_ENABLE=True(1)'),
}

# kind, width in bits (of one element for an array), the value names of an enum or the length of an array, and
# the TLV: from mstflint's parameter database (mlxconfig_dbs/mlxconfig_host.db of Mellanox/mstflint b9d9e844).
FIELDS = {
    'ACCURATE_TX_SCHEDULER': ('bool', 1, None, 'nv_power_conf'),
    'ADVANCED_PCI_SETTINGS': ('bool', 1, None, 'nv_pci_conf'),
    'ADVANCED_POWER_SETTINGS': ('bool', 1, None, 'nv_power_conf'),
    'ALLOW_RD_COUNTERS': ('bool', 1, None, 'nv_external_port_ctrl'),
    'ATS_ENABLED': ('bool', 1, None, 'nv_pci_conf'),
    'AUTO_POWER_SAVE_LINK_DOWN': ('bool', 1, None, 'nv_keep_link_up'),
    'BOOT_DBG_LOG': ('bool', 1, None, 'nv_rom_debug_level'),
    'BOOT_INTERRUPT_DIS': ('bool', 1, None, 'nv_rom_boot_conf1'),
    'BOOT_LACP_DIS': ('bool', 1, None, 'nv_rom_boot_conf1'),
    'BOOT_PKEY': ('int', 16, None, 'nv_rom_ib_boot_conf'),
    'BOOT_RETRY_CNT': ('enum', 3, {
        'NONE': 0, '_1': 1, '_2': 2, '_3': 3, '_4': 4, '_5': 5, '_6': 6, 'UNLIMITED': 7,
    }, 'nv_rom_boot_conf1'),
    'BOOT_UNDI_NETWORK_WAIT': ('int', 8, None, 'nv_rom_boot_conf2'),
    'BOOT_VLAN': ('int', 12, None, 'nv_rom_boot_conf1'),
    'BOOT_VLAN_EN': ('bool', 1, None, 'nv_rom_boot_conf1'),
    'CLAMP_TGT_RATE': ('bool', 1, None, 'nv_roce_cc_ecn'),
    'CLAMP_TGT_RATE_AFTER_TIME_INC': ('bool', 1, None, 'nv_roce_cc_ecn'),
    'CNP_802P_PRIO': ('int', 3, None, 'nv_roce_cc_ecn'),
    'CNP_DSCP': ('int', 6, None, 'nv_roce_cc_ecn'),
    'CQE_COMPRESSION': ('enum', 3, {'BALANCED': 0, 'AGGRESSIVE': 1}, 'nv_sw_offload_conf'),
    'DCBX_CEE': ('bool', 1, None, 'nv_lldp_nb_dcbx'),
    'DCBX_IEEE': ('bool', 1, None, 'nv_lldp_nb_dcbx'),
    'DCBX_WILLING': ('bool', 1, None, 'nv_lldp_nb_dcbx'),
    'DCE_TCP_G': ('int', 10, None, 'nv_roce_cc_ecn'),
    'DCE_TCP_RTT': ('int', 17, None, 'nv_roce_cc_ecn'),
    'DCR_LIFO_SIZE': ('int', 24, None, 'nv_ib_dc_conf'),
    'DO_NOT_CLEAR_PORT_STATS': ('bool', 1, None, 'nv_keep_link_up'),
    'DUP_MAC_ACTION': ('enum', 4, {'LAST_CFG': 0, 'LOAD_BALANCE': 1}, 'nv_mpfs_conf'),
    'DYNAMIC_VF_MSIX_TABLE': ('bool', 1, None, 'nv_pci_conf'),
    'ESWITCH_HAIRPIN_DESCRIPTORS': ('array', 8, 8, 'nv_internal_hairpin_conf'),
    'ESWITCH_HAIRPIN_TOT_BUFFER_SIZE': ('array', 8, 8, 'nv_internal_hairpin_conf'),
    'ESWITCH_IPV4_TTL_MODIFY_ENABLE': ('bool', 1, None, 'nv_sw_offload_conf'),
    'EXP_ROM_PXE_ENABLE': ('bool', 1, None, 'nv_pci_conf'),
    'EXP_ROM_UEFI_ARM_ENABLE': ('bool', 1, None, 'nv_pci_conf'),
    'EXP_ROM_UEFI_x86_ENABLE': ('bool', 1, None, 'nv_pci_conf'),
    'FLEX_IPV4_OVER_VXLAN_PORT': ('int', 16, None, 'nv_flex_parser_conf'),
    'FLEX_PARSER_PROFILE_ENABLE': ('int', 8, None, 'nv_flex_parser_conf'),
    'HOST_CHAINING_CACHE_DISABLE': ('bool', 1, None, 'nv_host_chaining_conf'),
    'HOST_CHAINING_DESCRIPTORS': ('array', 8, 8, 'nv_host_chaining_conf'),
    'HOST_CHAINING_MODE': ('enum', 2, {'DISABLED': 0, 'BASIC': 1}, 'nv_host_chaining_conf'),
    'HOST_CHAINING_TOTAL_BUFFER_SIZE': ('array', 8, 8, 'nv_host_chaining_conf'),
    'IB_ROUTING_MODE': ('enum', 1, {'GID': 0, 'LID': 1}, 'nv_mpfs_conf'),
    'ICM_CACHE_MODE': ('enum', 4, {'DEVICE_DEFAULT': 0, 'LARGE_SCALE_STEERING': 1}, 'nv_performance_tuning_conf'),
    'INITIAL_ALPHA_VALUE': ('int', 10, None, 'nv_roce_cc_ecn'),
    'INT_LOG_MAX_PAYLOAD_SIZE': ('enum', 4, {'AUTOMATIC': 0, '_4KB': 12}, 'nv_tpt_conf'),
    'IP_OVER_VXLAN_EN': ('bool', 1, None, 'nv_sw_offload_conf'),
    'IP_VER': ('enum', 2, {'IPv4': 0, 'IPv6': 1, 'IPv4_IPv6': 2, 'IPv6_IPv4': 3}, 'nv_rom_boot_conf2'),
    'KEEP_ETH_LINK_UP': ('bool', 1, None, 'nv_keep_link_up'),
    'KEEP_IB_LINK_UP': ('bool', 1, None, 'nv_keep_link_up'),
    'KEEP_LINK_UP_ON_BOOT': ('bool', 1, None, 'nv_keep_link_up'),
    'KEEP_LINK_UP_ON_STANDBY': ('bool', 1, None, 'nv_keep_link_up'),
    'LAG_RESOURCE_ALLOCATION': ('enum', 2, {
        'DEVICE_DEFAULT': 0, 'PRE_ALLOCATION': 1, 'PRE_ALLOCATION_QA': 2,
    }, 'nv_power_conf'),
    'LEGACY_BOOT_PROTOCOL': ('enum', 8, {
        'NONE': 0, 'PXE': 1, 'ISCSI': 2, 'PXE_WO_FAIL_ISCSI': 4, 'ISCSI_WO_FAIL_PXE': 5,
    }, 'nv_rom_boot_conf1'),
    'LINK_TYPE': ('enum', 2, {'IB': 1, 'ETH': 2}, 'nv_vpi_link_type'),
    'LLDP_NB_DCBX': ('bool', 1, None, 'nv_lldp_nb_conf'),
    'LLDP_NB_RX_MODE': ('enum', 2, {'OFF': 0, 'MANDATORY': 1, 'ALL': 2}, 'nv_lldp_nb_conf'),
    'LLDP_NB_TX_MODE': ('enum', 2, {'OFF': 0, 'MANDATORY': 1, 'ALL': 2}, 'nv_lldp_nb_conf'),
    'LOG_DCR_HASH_TABLE_SIZE': ('int', 5, None, 'nv_ib_dc_conf'),
    'LOG_MAX_OUTSTANDING_WQE': ('int', 5, None, 'nv_sw_offload_conf'),
    'LOG_MAX_QUEUE': ('int', 6, None, 'nv_sw_accelerate_conf'),
    'LOG_TX_PSN_WINDOW': ('int', 6, None, 'nv_sw_offload_conf'),
    'LRO_LOG_TIMEOUT0': ('int', 4, None, 'nv_sw_offload_conf'),
    'LRO_LOG_TIMEOUT1': ('int', 4, None, 'nv_sw_offload_conf'),
    'LRO_LOG_TIMEOUT2': ('int', 4, None, 'nv_sw_offload_conf'),
    'LRO_LOG_TIMEOUT3': ('int', 4, None, 'nv_sw_offload_conf'),
    'MAX_PACKET_LIFETIME': ('int', 6, None, 'nv_ib_dc_conf'),
    'MEMIC_BAR_SIZE': ('int', 8, None, 'nv_memic_conf'),
    'MEMIC_SIZE_LIMIT': ('enum', 4, {'DISABLED': 0, '_256KB': 1, '_512KB': 2, '_1024KB': 3}, 'nv_memic_conf'),
    'MIN_TIME_BETWEEN_CNPS': ('int', 17, None, 'nv_roce_cc_ecn'),
    'MKEY_BY_NAME': ('bool', 1, None, 'nv_sw_offload_conf'),
    'MPFS_MC_LOOPBACK_DISABLE': ('bool', 1, None, 'nv_mpfs_conf'),
    'MPFS_UC_LOOPBACK_DISABLE': ('bool', 1, None, 'nv_mpfs_conf'),
    'MULTI_PORT_VHCA_EN': ('bool', 1, None, 'nv_hca_conf'),
    'NON_PREFETCHABLE_PF_BAR': ('bool', 1, None, 'nv_global_pci_conf'),
    'NUM_OF_PF': ('int', 8, None, 'nv_global_pci_conf'),
    'NUM_OF_PFC': ('int', 4, None, 'nv_qos_conf'),
    'NUM_OF_TC': ('enum', 4, {
        '_8_TCs': 0, '_1_TC': 1, '_2_TCs': 2, '_3_TCs': 3, '_4_TCs': 4, '_5_TCs': 5, '_6_TCs': 6, '_7_TCs': 7,
    }, 'nv_qos_conf'),
    'NUM_OF_VFS': ('int', 16, None, 'nv_global_pci_conf'),
    'NUM_OF_VL': ('enum', 4, {'_1_VL': 1, '_2_VLs': 2, '_4_VLs': 3, '_8_VLs': 4, '_15_VLs': 5}, 'nv_qos_conf'),
    'NUM_PF_MSIX': ('int', 10, None, 'nv_global_pci_conf'),
    'NUM_PF_MSIX_VALID': ('bool', 1, None, 'nv_global_pci_conf'),
    'NUM_VF_MSIX': ('int', 10, None, 'nv_global_pci_conf'),
    'P2P_ORDERING_MODE': ('enum', 2, {
        'DEVICE_DEFAULT': 0, 'SECURE_NONE': 1, 'SECURE_TRUST': 2, 'SECURE_ALL': 3,
    }, 'nv_pci_conf'),
    'PARTIAL_RESET_EN': ('bool', 1, None, 'nv_power_conf'),
    'PCIE_CREDIT_TOKEN_TIMEOUT': ('int', 16, None, 'nv_global_pci_conf_2'),
    'PCI_ATOMIC_MODE': ('enum', 3, {
        'PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED': 0, 'PCI_ATOMICS_ENABLED_EXT_ATOMICS_ENABLED_SERIALIZED': 1,
        'PCI_ATOMICS_ENABLED_EXT_ATOMICS_DISABLED': 2, 'PCI_ATOMICS_ENABLED_EXT_ATOMICS_ENABLED_NONCOHERENT': 3,
        'PCI_ATOMICS_ENABLED_EXT_ATOMICS_ENABLED': 4,
    }, 'nv_sw_offload_conf'),
    'PCI_DOWNSTREAM_PORT_OWNER': ('array', 8, 16, 'nv_global_pci_conf_3'),
    'PCI_SWITCH_EMULATION_ENABLE': ('bool', 1, None, 'nv_emulation_pci_switch_conf'),
    'PCI_SWITCH_EMULATION_NUM_PORT': ('int', 8, None, 'nv_emulation_pci_switch_conf'),
    'PCI_WR_ORDERING': ('enum', 2, {'per_mkey': 0, 'force_relax': 1}, 'nv_hca_conf'),
    'PER_PF_NUM_SF': ('bool', 1, None, 'nv_global_pci_conf'),
    'PF_BAR2_ENABLE': ('bool', 1, None, 'nv_global_pci_conf'),
    'PF_BAR2_SIZE': ('int', 8, None, 'nv_global_pci_conf'),
    'PF_LOG_BAR_SIZE': ('int', 6, None, 'nv_global_pci_conf'),
    'PF_NUM_OF_VF_VALID': ('bool', 1, None, 'nv_global_pci_conf'),
    'PF_NUM_PF_MSIX': ('int', 12, None, 'nv_pf_pci_conf'),
    'PF_NUM_PF_MSIX_VALID': ('bool', 1, None, 'nv_global_pci_conf'),
    'PF_SF_BAR_SIZE': ('int', 8, None, 'nv_pf_pci_conf'),
    'PF_TOTAL_SF': ('int', 16, None, 'nv_pf_pci_conf'),
    'PHY_COUNT_LINK_UP_DELAY': ('enum', 2, {'DELAY_NONE': 0, 'DELAY_10_SEC': 1, 'DELAY_20_SEC': 2}, 'nv_power_conf'),
    'PHY_FEC_OVERRIDE': ('enum', 3, {
        'DEVICE_DEFAULT': 0, 'MODE_1': 1, 'MODE_2': 2, 'MODE_3': 3, 'MODE_4': 4,
    }, 'nv_link_phy_conf'),
    'PORT_OWNER': ('bool', 1, None, 'nv_external_port_ctrl'),
    'PRIO_TAG_REQUIRED_EN': ('bool', 1, None, 'nv_sw_offload_conf'),
    'PROG_PARSE_GRAPH': ('bool', 1, None, 'nv_flex_parser_conf'),
    'RATE_REDUCE_MONITOR_PERIOD': ('int', 17, None, 'nv_roce_cc_ecn'),
    'RATE_TO_SET_ON_FIRST_CNP': ('int', 32, None, 'nv_roce_cc_ecn'),
    'RDMA_SELECTIVE_REPEAT_EN': ('bool', 1, None, 'nv_sw_offload_conf'),
    'REAL_TIME_CLOCK_ENABLE': ('bool', 1, None, 'nv_sw_offload_conf'),
    'RENEG_ON_CHANGE': ('bool', 1, None, 'nv_external_port_ctrl'),
    'RESET_WITH_HOST_ON_ERRORS': ('bool', 1, None, 'nv_power_conf'),
    'ROCE_CC_ALGORITHM': ('enum', 1, {'ECN': 0, 'QCN': 1}, 'nv_roce_cc'),
    'ROCE_CC_LEGACY_DCQCN': ('bool', 1, None, 'nv_global_roce_cc_conf'),
    'ROCE_CC_PRIO_MASK': ('int', 8, None, 'nv_roce_cc'),
    'ROCE_CONTROL': ('enum', 2, {'DEVICE_DEFAULT': 0, 'ROCE_DISABLE': 1, 'ROCE_ENABLE': 2}, 'nv_hca_conf'),
    'ROCE_NEXT_PROTOCOL': ('int', 8, None, 'nv_roce_1_5_conf'),
    'ROCE_RTT_RESP_DSCP': ('int', 6, None, 'nv_roce_conf'),
    'ROCE_RTT_RESP_DSCP_MODE': ('enum', 2, {'DEVICE_DEFAULT': 0, 'FIXED_VALUE': 1, 'RX_PACKET': 2}, 'nv_roce_conf'),
    'RPG_AI_RATE': ('int', 32, None, 'nv_roce_cc_ecn'),
    'RPG_BYTE_RESET': ('int', 32, None, 'nv_roce_cc_ecn'),
    'RPG_GD': ('int', 4, None, 'nv_roce_cc_ecn'),
    'RPG_HAI_RATE': ('int', 32, None, 'nv_roce_cc_ecn'),
    'RPG_MAX_RATE': ('int', 32, None, 'nv_roce_cc_ecn'),
    'RPG_MIN_DEC_FAC': ('int', 8, None, 'nv_roce_cc_ecn'),
    'RPG_MIN_RATE': ('int', 32, None, 'nv_roce_cc_ecn'),
    'RPG_THRESHOLD': ('int', 5, None, 'nv_roce_cc_ecn'),
    'RPG_TIME_RESET': ('int', 17, None, 'nv_roce_cc_ecn'),
    'SAFE_MODE_ENABLE': ('bool', 1, None, 'safe_mode_conf'),
    'SAFE_MODE_THRESHOLD': ('int', 8, None, 'safe_mode_conf'),
    'SRIOV_EN': ('bool', 1, None, 'nv_global_pci_conf'),
    'SRIOV_IB_ROUTING_MODE': ('enum', 1, {'GID': 0, 'LID': 1}, 'nv_mpfs_conf'),
    'STRICT_VF_MSIX_NUM': ('bool', 1, None, 'nv_global_pci_conf'),
    'SW_RECOVERY_ON_ERRORS': ('bool', 1, None, 'nv_power_conf'),
    'TLS_OPTIMIZE': ('bool', 1, None, 'nv_performance_tuning_conf'),
    'TRACER_ENABLE': ('bool', 1, None, 'nv_external_port_ctrl'),
    'TUNNEL_ECN_COPY_DISABLE': ('bool', 1, None, 'nv_sw_offload_conf'),
    'TUNNEL_IP_PROTO_ENTROPY_DISABLE': ('bool', 1, None, 'nv_sw_offload_conf'),
    'TX_SCHEDULER_BURST': ('int', 5, None, 'nv_performance_tuning_conf'),
    'UCTX_EN': ('bool', 1, None, 'nv_sw_offload_conf'),
    'UEFI_HII_EN': ('bool', 1, None, 'nv_rom_uefi_conf'),
    'UEFI_LOGS': ('enum', 4, {'DISABLED': 0, 'STDOUT': 1, 'STDERR': 2}, 'nv_rom_uefi_debug_level'),
    'UNKNOWN_UPLINK_MAC_FLOOD': ('bool', 1, None, 'nv_mpfs_conf'),
    'VF_LOG_BAR_SIZE': ('int', 6, None, 'nv_global_pci_conf'),
    'VF_NODNIC_ENABLE': ('bool', 1, None, 'nv_global_pci_conf'),
    'VF_VPD_ENABLE': ('bool', 1, None, 'nv_global_pci_conf'),
    'VL15_BUFFER_SIZE': ('int', 4, None, 'nv_qos_conf'),
    'WOL_MAGIC_EN': ('bool', 1, None, 'nv_wol_conf'),
    'ZERO_TOUCH_TUNING_ENABLE': ('bool', 1, None, 'nv_performance_tuning_conf'),
}


def field(name):
    """(kind, bits, enum values or array length, TLV) of a parameter name, or None when the database lacks it."""
    base = name.split('[')[0]
    for candidate in (base, re.sub(r'_P\d+$', '', base), re.sub(r'_M\d+$', '', base)):
        if candidate in FIELDS:
            return FIELDS[candidate]
    return None


def _number(printed):
    match = _PRINTED_NUMBER_RE.search(printed)
    return int(match.group(1)) if match else int(printed)


def catalog_param(name, printed):
    """The numeric state of a catalog parameter from the value a real card printed."""
    kind, bits, extra, _tlv = field(name) or ('int', 32, None, None)
    if kind == 'array':
        return {'kind': 'array', 'size': extra, 'bits': bits, 'default': 0, 'current': 0, 'next': 0, 'ro': False,
                'elements': dict((column, [0] * extra) for column in ('default', 'current', 'next'))}
    value = _number(printed)
    state = {'kind': kind, 'bits': bits, 'default': value, 'current': value, 'next': value, 'ro': False}
    if kind == 'enum':
        state['values'] = dict(extra)
    return state


def device_params(device_type, explicit):
    """``(params, order)`` of a simulated card: its generation's catalog, then the profile's explicit parameters.

    An explicit parameter replaces the catalog's; one the catalog lacks (LINK_TYPE_P1 of a VPI card) is placed
    after SRIOV_EN, where VPI cards print their link types.
    """
    params, order = {}, []
    catalog = CATALOGS.get(device_type)
    for item in (catalog[1].split() if catalog else []):
        name, _sep, printed = item.partition('=')
        params[name] = catalog_param(name, printed)
        order.append(name)
    extra = [name for name in explicit if name not in params]
    for name, state in explicit.items():
        info = field(name)
        state = dict(state)
        if info and state.get('kind') in ('int', 'enum', 'bool'):
            state.setdefault('bits', info[1])
            if info[0] == 'enum':
                # current tools print and accept the database's names
                state['kind'], state['values'] = 'enum', dict(info[2])
        params[name] = state
    position = order.index('SRIOV_EN') + 1 if 'SRIOV_EN' in order else len(order)
    order[position:position] = extra
    return params, order


def log_call(tool, argv):
    with open(os.path.join(STATE_DIR, 'calls.log'), 'a') as handle:
        handle.write(json.dumps([tool] + list(argv)) + '\n')


def state_files():
    if not os.path.isdir(STATE_DIR):
        return []
    return sorted(os.path.join(STATE_DIR, f) for f in os.listdir(STATE_DIR) if f.endswith('.json'))


def load(path):
    with open(path) as handle:
        return json.load(handle)


def save(path, state):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
    with os.fdopen(fd, 'w') as handle:
        json.dump(state, handle, indent=1, sort_keys=True)
    os.rename(tmp, path)


def pci_of(path):
    """The PCI address a state file stands for (its name)."""
    return os.path.basename(path)[:-len('.json')]


def adapter_of(pci):
    """``0000:5e:00.1`` -> ``0000:5e:00``: the PCI functions of one adapter share its NV configuration and flash."""
    return pci.rsplit('.', 1)[0]


def adapter_paths(path):
    """The state files of every function of the adapter ``path`` belongs to, the lowest function first."""
    adapter = adapter_of(pci_of(path))
    return [member for member in state_files() if adapter_of(pci_of(member)) == adapter] or [path]


def load_nv(path):
    """The state of a function with its adapter's NV configuration (``params`` and ``order``)."""
    state = load(path)
    primary = adapter_paths(path)[0]
    if primary != path:
        shared = load(primary)
        state['params'], state['order'] = shared['params'], shared.get('order')
    return state


def save_nv(path, state):
    """Save the NV configuration ``state`` (loaded with load_nv) for the whole adapter of ``path``."""
    primary = adapter_paths(path)[0]
    if primary == path:
        save(path, state)
        return
    shared = load(primary)
    shared['params'] = state['params']
    save(primary, shared)


def find_device(device):
    """Return (path, state) of a PCI address or MST path, or (None, None)."""
    if _PCI_RE.match(device):
        pci = device.lower() if len(device) > 7 else '0000:' + device.lower()
        path = os.path.join(STATE_DIR, pci + '.json')
        return (path, load(path)) if os.path.exists(path) else (None, None)
    if os.path.dirname(device) == MST_DIR.rstrip('/'):
        if not os.path.exists(device):
            return None, None
        for path in state_files():
            state = load(path)
            if state.get('mst') == os.path.basename(device):
                return path, state
    return None, None


def activate(path):
    """What a firmware reset or a reboot does to the adapter of ``path``: Next Boot becomes Current (the adapter's
    NV configuration, kept with its lowest function), and every function runs the burned image."""
    for index, member in enumerate(adapter_paths(path)):
        state = load(member)
        for param in (state['params'].values() if index == 0 else ()):
            param['current'] = param['next']
            if 'elements' in param:
                param['elements']['current'] = list(param['elements']['next'])
        # A burned firmware image (mlxfwmanager double) starts running, and the kernel shows its version in fw_ver.
        firmware = state.get('fw')
        if firmware and firmware.get('running') != firmware.get('flash'):
            firmware['running'] = firmware['flash']
            _show_running_version(pci_of(member), firmware['running'])
        save(member, state)


def _show_running_version(pci, version):
    """Rewrite infiniband/<dev>/fw_ver of the PCI function in the lab's sysfs tree, as the driver shows it."""
    ib_dir = os.path.join(LAB_ROOT, 'sys', 'bus', 'pci', 'devices', pci, 'infiniband')
    for name in (sorted(os.listdir(ib_dir)) if os.path.isdir(ib_dir) else []):
        fw_ver = os.path.join(ib_dir, name, 'fw_ver')
        if os.path.isfile(fw_ver):
            with open(fw_ver, 'w') as handle:
                handle.write('%s\n' % version)


def fail(message, rc=RC_ERROR):
    sys.stdout.write('-E- %s\n' % message)
    sys.exit(rc)
