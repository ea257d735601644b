# -*- coding: utf-8 -*-
# Copyright (c) gpunet.rdma contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parse ``mlxconfig``/``mstconfig`` query and set tables and plan a single ``set`` call.

Every tool version prints the same table, with column widths that changed over the releases (name column of 36,
44, 48 characters; value columns of 16, 20 and 33 characters) and header labels that are not aligned with the
values below them. The columns are therefore found from the header's labels (their order), and each row is
split by whitespace: values never contain spaces (parameter and value names come from the tool's database,
which forbids them). Older tools pad a value of exactly the column width without a separating space, so two
values can be glued (``PCIE_ENDPOINT(0)PCIE_ENDPOINT(0)``); such a row is split after each complete value.

    Configurations:                              Default         Current         Next Boot
    *        LINK_TYPE_P1                        ETH(2)          ETH(2)          IB(1)
    *RO      PF_BAR2_SIZE                        0               0               0
             ESWITCH_HAIRPIN_DESCRIPTORS         Array[0..7]     Array[0..7]     Array[0..7]
             ESWITCH_HAIRPIN_DESCRIPTORS[0]      128             128             128
             EXP_ROM_UEFI_x86_ENABLE             False(0)        False(0)        False(0)

Layouts: ``q`` (Next Boot only), ``-e q`` (Default, Current, Next Boot; Default and Next Boot only when the
firmware cannot read the current values), the table ``set`` prints (Next Boot and New) and the one of
``set --with_default`` (the Next Boot column labelled Default). Free of Ansible imports.
"""

from __future__ import annotations

import difflib
import math
import re

from ansible_collections.gpunet.rdma.plugins.module_utils._tool_runner import ToolRunner, option

# mlxconfig (NVIDIA MFT) and mstconfig (mstflint) take the same command lines: -d DEVICE, then -e (the Default /
# Current / Next Boot layout) or nothing, then `q [NAMES]`, or `-y set NAME=VALUE ...`.
MLXCONFIG = ToolRunner('mlxconfig', {
    'device': option('-d'),
    'layout': lambda flag: [flag] if flag else [],
    'query': lambda names: ['q'] + [str(name) for name in names or ()],
    'set': lambda assignments: ['-y', 'set'] + [str(item) for item in assignments],
})

COLUMNS = ('Default', 'Current', 'Next Boot', 'New')
_COLUMN_KEYS = {'Default': 'default', 'Current': 'current', 'Next Boot': 'next_boot', 'New': 'new'}
_HEADER_LABEL_RE = re.compile(r'Next Boot|Default|Current|New')
_VALUE_RE = re.compile(r'^(?P<name>[A-Za-z0-9_]+)\((?P<number>-?\d+)\)$')
_INT_RE = re.compile(r'^(?:0[xX][0-9a-fA-F]+|-?\d+)$')
_ARRAY_RE = re.compile(r'^Array\[(?P<first>\d+)\.\.(?P<last>\d+)\]$')
# Names as the tools print them: any case (EXP_ROM_UEFI_x86_ENABLE), digits, an array element index.
_PARAM_NAME_RE = re.compile(r'^(?P<base>[A-Za-z_][A-Za-z0-9_]*)(?:\[(?P<index>\d+)\])?$')
_PRINTED_RE = re.compile(r'^(?:[A-Za-z0-9_]+\(-?\d+\)|[A-Za-z0-9_]+|0[xX][0-9A-Fa-f]+|Array\[\d+\.\.\d+\]|N/A)$')
# One complete value at the start of two glued ones; only the parenthesised and the array form end visibly.
_GLUED_HEAD_RE = re.compile(r'^(?:[A-Za-z0-9_]+\(-?\d+\)|Array\[\d+\.\.\d+\]|N/A)')
_MARKER_RE = re.compile(r'^\*?(?:RO)?$')
_WORD_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
_DEVICE_FIELDS = {'Device type': 'device_type', 'Name': 'name', 'Description': 'description', 'Device': 'device',
                  'PCI device': 'device'}
# Lines the tools print around the table; none of them is a parameter row.
_TRAILER_RE = re.compile(
    r"^(?:The '\*' shows|The 'RO' shows|Device Firmware does not support reading|Apply new Configuration\?"
    r"|Applying\.\.\.|Apply reset and set\?|Nothing to set|-I- |-W- |Please reboot|Please power cycle)")
_NOT_SUPPORTED_RE = re.compile(r'^Device Firmware does not support reading (?P<what>.*)$')
_U32_MAX = 0xFFFFFFFF

# Named values of enum parameters whose names the query alone does not list. The tools accept a number for an
# enum only when it is one of the names' numbers, so a parameter of this table refuses any other number.
KNOWN_ENUMS = {
    'LINK_TYPE': {'IB': 1, 'ETH': 2},
    'PCI_WR_ORDERING': {'per_mkey': 0, 'force_relax': 1},
}
# ConnectX-3 (mlx4) ports also had the automatic mode; later generations refuse it.
_CONNECTX3_ENUMS = {'LINK_TYPE': {'IB': 1, 'ETH': 2, 'VPI': 3}}
# Parameters that exist on some ConnectX models but not others: a name from this
# list that the device does not print is "not on this device", not a typo.
KNOWN_PARAMS = frozenset([
    'LINK_TYPE_P1', 'LINK_TYPE_P2', 'SRIOV_EN', 'NUM_OF_VFS', 'NUM_OF_PF', 'ATS_ENABLED',
    'ADVANCED_PCI_SETTINGS', 'PCI_WR_ORDERING', 'KEEP_ETH_LINK_UP_P1', 'KEEP_ETH_LINK_UP_P2',
    'KEEP_IB_LINK_UP_P1', 'KEEP_IB_LINK_UP_P2', 'ROCE_CC_PRIO_MASK_P1', 'ROCE_CC_PRIO_MASK_P2',
    'SRIOV_IB_ROUTING_MODE_P1', 'SRIOV_IB_ROUTING_MODE_P2', 'INTERNAL_CPU_MODEL', 'MEMIC_BAR_SIZE',
    'EXP_ROM_UEFI_x86_ENABLE', 'EXP_ROM_UEFI_ARM_ENABLE', 'EXP_ROM_PXE_ENABLE', 'UEFI_HII_EN',
    'ROCE_CONTROL', 'CQE_COMPRESSION', 'NUM_PF_MSIX', 'NUM_VF_MSIX', 'PF_LOG_BAR_SIZE', 'VF_LOG_BAR_SIZE',
])
_TRUE_WORDS = ('true', 'yes', 'on', '1')
_FALSE_WORDS = ('false', 'no', 'off', '0')

# Width in bits of the numeric and enum fields narrower than 32 bits, from mstflint's parameter database
# (mlxconfig_dbs/mlxconfig_host.db of Mellanox/mstflint b9d9e844); for an array parameter, the width of one
# element. The tools refuse a larger number ("The value N is not valid, as its size is B bits"); names of port
# and module parameters are listed without their _P<n> / _M<n> suffix, as in the database.
_FIELD_BITS_BY_WIDTH = {
    1: (
        'DPU_RESET_NOTIFICATION_ENABLED IB_ROUTING_MODE INTERNAL_CPU_ESWITCH_MANAGER INTERNAL_CPU_IB_VPORT0 '
        'INTERNAL_CPU_OFFLOAD_ENGINE INTERNAL_CPU_PAGE_SUPPLIER INTERNAL_CPU_RSHIM PCORE0_REF_CLK '
        'PCORE1_REF_CLK PCORE2_REF_CLK ROCE_CC_ALGORITHM SRIOV_IB_ROUTING_MODE'),
    2: (
        'BAR_PAGE_ALIGNMENT BOOT_DBG_LOG_ARP BOOT_DBG_LOG_DHCP BOOT_DBG_LOG_DHCP6 '
        'BOOT_DBG_LOG_DRIVER_SETTINGS BOOT_DBG_LOG_DRV BOOT_DBG_LOG_IP BOOT_DBG_LOG_IPV6 BOOT_DBG_LOG_NDP '
        'BOOT_DBG_LOG_NDRV BOOT_DBG_LOG_NDRV_CMD BOOT_DBG_LOG_NDRV_DEV BOOT_DBG_LOG_NDRV_PORT '
        'BOOT_DBG_LOG_NEIGHBOR BOOT_DBG_LOG_NETDEVICE BOOT_DBG_LOG_PXE_UNDI BOOT_DBG_LOG_ROMPREFIX '
        'BOOT_DBG_LOG_STATUS BOOT_DBG_LOG_STP BOOT_DBG_LOG_TCP BOOT_DBG_LOG_TCPIP BOOT_DBG_LOG_TFTP '
        'BOOT_DBG_LOG_UDP BOOT_DBG_LOG_URI CNP_DSCP_MODE DATA_CRYPTO_ENGINE DBR_LESS_SQP DELAY_HOST_OS_INIT '
        'ECPF_ESWITCH_MANAGER ECPF_PAGE_SUPPLIER ETS_SCHED_MODE FLOW_CONTROL HOST_CHAINING_MODE '
        'HOST_MKC_WRITE_SO HOST_MNG_RX_PRECODING HOST_MNG_TX_PRECODING HOST_PRIV_DYNAMIC_VF_MSIX '
        'HOST_PRIV_FLASH_ACCESS HOST_PRIV_FW_UPDATE HOST_PRIV_LEVEL HOST_PRIV_NIC_RESET HOST_PRIV_NV_GLOBAL '
        'HOST_PRIV_NV_HOST HOST_PRIV_NV_INTERNAL_CPU HOST_PRIV_NV_PORT HOST_PRIV_PCC_UPDATE HOST_PRIV_RSHIM '
        'INT_CPU_AUTO_SHUTDOWN IP_VER LAG_RESOURCE_ALLOCATION LINK_TYPE LLDP_NB_RX_MODE LLDP_NB_TX_MODE '
        'LOCAL_FAULT_TX_SQUELCH MANAGEMENT_PF_MODE MEMIC_ATOMIC MEMIC_ATOMIC_ENDIANESS MKEY_BY_NAME_RANGE '
        'MODULE_HOST_RX_PRECODING MODULE_HOST_TX_PRECODING MODULE_LINE_RX_PRECODING MODULE_LINE_TX_PRECODING '
        'NVMF_PACER_MODE P2P_ORDERING_MODE PCIE_CONGESTION_MONITOR PCI_BUS00_HIERARCHY_TYPE '
        'PCI_BUS00_PERST_SOURCE PCI_BUS00_SWITCH_INDEX PCI_BUS01_HIERARCHY_TYPE PCI_BUS01_PERST_SOURCE '
        'PCI_BUS01_SWITCH_INDEX PCI_BUS02_HIERARCHY_TYPE PCI_BUS02_PERST_SOURCE PCI_BUS02_SWITCH_INDEX '
        'PCI_BUS03_HIERARCHY_TYPE PCI_BUS03_PERST_SOURCE PCI_BUS03_SWITCH_INDEX PCI_BUS04_HIERARCHY_TYPE '
        'PCI_BUS04_PERST_SOURCE PCI_BUS04_SWITCH_INDEX PCI_BUS05_HIERARCHY_TYPE PCI_BUS05_PERST_SOURCE '
        'PCI_BUS05_SWITCH_INDEX PCI_BUS06_HIERARCHY_TYPE PCI_BUS06_PERST_SOURCE PCI_BUS06_SWITCH_INDEX '
        'PCI_BUS07_HIERARCHY_TYPE PCI_BUS07_PERST_SOURCE PCI_BUS07_SWITCH_INDEX PCI_BUS10_HIERARCHY_TYPE '
        'PCI_BUS10_PERST_SOURCE PCI_BUS10_SWITCH_INDEX PCI_BUS11_HIERARCHY_TYPE PCI_BUS11_PERST_SOURCE '
        'PCI_BUS11_SWITCH_INDEX PCI_BUS12_HIERARCHY_TYPE PCI_BUS12_PERST_SOURCE PCI_BUS12_SWITCH_INDEX '
        'PCI_BUS13_HIERARCHY_TYPE PCI_BUS13_PERST_SOURCE PCI_BUS13_SWITCH_INDEX PCI_BUS14_HIERARCHY_TYPE '
        'PCI_BUS14_PERST_SOURCE PCI_BUS14_SWITCH_INDEX PCI_BUS15_HIERARCHY_TYPE PCI_BUS15_PERST_SOURCE '
        'PCI_BUS15_SWITCH_INDEX PCI_BUS16_HIERARCHY_TYPE PCI_BUS16_PERST_SOURCE PCI_BUS16_SWITCH_INDEX '
        'PCI_BUS17_HIERARCHY_TYPE PCI_BUS17_PERST_SOURCE PCI_BUS17_SWITCH_INDEX PCI_BUS20_HIERARCHY_TYPE '
        'PCI_BUS20_PERST_SOURCE PCI_BUS20_SWITCH_INDEX PCI_BUS21_HIERARCHY_TYPE PCI_BUS21_PERST_SOURCE '
        'PCI_BUS21_SWITCH_INDEX PCI_BUS22_HIERARCHY_TYPE PCI_BUS22_PERST_SOURCE PCI_BUS22_SWITCH_INDEX '
        'PCI_BUS23_HIERARCHY_TYPE PCI_BUS23_PERST_SOURCE PCI_BUS23_SWITCH_INDEX PCI_BUS24_HIERARCHY_TYPE '
        'PCI_BUS24_PERST_SOURCE PCI_BUS24_SWITCH_INDEX PCI_BUS25_HIERARCHY_TYPE PCI_BUS25_PERST_SOURCE '
        'PCI_BUS25_SWITCH_INDEX PCI_BUS26_HIERARCHY_TYPE PCI_BUS26_PERST_SOURCE PCI_BUS26_SWITCH_INDEX '
        'PCI_BUS27_HIERARCHY_TYPE PCI_BUS27_PERST_SOURCE PCI_BUS27_SWITCH_INDEX PCI_SWITCH0_UPSTREAM_PORT_PEX '
        'PCI_SWITCH1_UPSTREAM_PORT_PEX PCI_SWITCH2_UPSTREAM_PORT_PEX PCI_WR_ORDERING PF_VF_BAR2_MODE '
        'PHY_AUTO_NEG PHY_COUNT_LINK_UP_DELAY PHY_ETH_RECOVERY PHY_IB_RECOVERY ROCE_CC_CWND_BY_NP_COUNT '
        'ROCE_CC_DCQCN_COMPATIBILITY_MODE ROCE_CC_IFA2_TA ROCE_CC_RTT_TIMESTAMP_FORMAT ROCE_CC_STEERING_EXT '
        'ROCE_CC_TX_EVENT_ACK ROCE_CONTROL ROCE_RTT_RESP_DSCP_MODE SWP_L4_CHECKSUM_MODE '
        'TRANSPORT_TIMEOUT_SCALE TRANSPORT_TIMEOUT_VF TX_SCHEDULER_FWS_REACTIVITY UEFI_LOG_MIN_SEVERITY '
        'VF_MIGRATION_MODE VIRTIO_BLK_EMULATION_PF_PCI_LAYOUT VIRTIO_BLK_EMULATION_VF_PCI_LAYOUT '
        'VIRTIO_BLK_EMU_MNG_PF_PCI_LAYOUT VIRTIO_BLK_EMU_MNG_VF_PCI_LAYOUT VIRTIO_NET_EMULATION_PF_PCI_LAYOUT '
        'VIRTIO_NET_EMULATION_VF_PCI_LAYOUT VIRTIO_NET_EMU_MNG_PF_PCI_LAYOUT VIRTIO_NET_EMU_MNG_VF_PCI_LAYOUT'),
    3: (
        'BOOT_RETRY_CNT1 CNP_802P_PRIO CQE_COMPRESSION ETH_ETS_GRANULARITY IB_CC_SHAPER_COALESCE '
        'IB_ETS_GRANULARITY LOAD_BALANCE_MODE MULTIPATH_DSCP MULTI_PCI_RESOURCE_SHARING '
        'PARTIAL_WRITE_CACHE_MODE PCC_HANDLE_CORE_UTIL PCC_NP_HANDLE_CORE_UTIL PCI_ATOMIC_MODE '
        'PCI_BUS00_DEVICE_TYPE PCI_BUS00_SPEED PCI_BUS00_WIDTH PCI_BUS01_DEVICE_TYPE PCI_BUS01_SPEED '
        'PCI_BUS01_WIDTH PCI_BUS02_DEVICE_TYPE PCI_BUS02_SPEED PCI_BUS02_WIDTH PCI_BUS03_DEVICE_TYPE '
        'PCI_BUS03_SPEED PCI_BUS03_WIDTH PCI_BUS04_DEVICE_TYPE PCI_BUS04_SPEED PCI_BUS04_WIDTH '
        'PCI_BUS05_DEVICE_TYPE PCI_BUS05_SPEED PCI_BUS05_WIDTH PCI_BUS06_DEVICE_TYPE PCI_BUS06_SPEED '
        'PCI_BUS06_WIDTH PCI_BUS07_DEVICE_TYPE PCI_BUS07_SPEED PCI_BUS07_WIDTH PCI_BUS0_RESTRICT_SPEED '
        'PCI_BUS0_RESTRICT_WIDTH PCI_BUS10_DEVICE_TYPE PCI_BUS10_SPEED PCI_BUS10_WIDTH PCI_BUS11_DEVICE_TYPE '
        'PCI_BUS11_SPEED PCI_BUS11_WIDTH PCI_BUS12_DEVICE_TYPE PCI_BUS12_SPEED PCI_BUS12_WIDTH '
        'PCI_BUS13_DEVICE_TYPE PCI_BUS13_SPEED PCI_BUS13_WIDTH PCI_BUS14_DEVICE_TYPE PCI_BUS14_SPEED '
        'PCI_BUS14_WIDTH PCI_BUS15_DEVICE_TYPE PCI_BUS15_SPEED PCI_BUS15_WIDTH PCI_BUS16_DEVICE_TYPE '
        'PCI_BUS16_SPEED PCI_BUS16_WIDTH PCI_BUS17_DEVICE_TYPE PCI_BUS17_SPEED PCI_BUS17_WIDTH '
        'PCI_BUS1_RESTRICT_SPEED PCI_BUS1_RESTRICT_WIDTH PCI_BUS20_DEVICE_TYPE PCI_BUS20_SPEED '
        'PCI_BUS20_WIDTH PCI_BUS21_DEVICE_TYPE PCI_BUS21_SPEED PCI_BUS21_WIDTH PCI_BUS22_DEVICE_TYPE '
        'PCI_BUS22_SPEED PCI_BUS22_WIDTH PCI_BUS23_DEVICE_TYPE PCI_BUS23_SPEED PCI_BUS23_WIDTH '
        'PCI_BUS24_DEVICE_TYPE PCI_BUS24_SPEED PCI_BUS24_WIDTH PCI_BUS25_DEVICE_TYPE PCI_BUS25_SPEED '
        'PCI_BUS25_WIDTH PCI_BUS26_DEVICE_TYPE PCI_BUS26_SPEED PCI_BUS26_WIDTH PCI_BUS27_DEVICE_TYPE '
        'PCI_BUS27_SPEED PCI_BUS27_WIDTH PCI_BUS2_RESTRICT_SPEED PCI_BUS2_RESTRICT_WIDTH '
        'PCI_BUS3_RESTRICT_SPEED PCI_BUS3_RESTRICT_WIDTH PCI_BUS4_RESTRICT_SPEED PCI_BUS4_RESTRICT_WIDTH '
        'PCI_BUS5_RESTRICT_SPEED PCI_BUS5_RESTRICT_WIDTH PCI_BUS6_RESTRICT_SPEED PCI_BUS6_RESTRICT_WIDTH '
        'PCI_BUS7_RESTRICT_SPEED PCI_BUS7_RESTRICT_WIDTH PCI_TOPOLOGY_MODE PF_SD_GROUP PHY_FEC_OVERRIDE '
        'PHY_IB_NDR_FEC_OVERRIDE QOS_TRUST_STATE ROCE_CC_CNP_MODERATION ROCE_CC_SHAPER_COALESCE '
        'TPH_STEERING_TAG_TABLE TX_SCHEDULER_LOCALITY_MODE UPSTREAM_PORT0_TX_AMP UPSTREAM_PORT1_TX_AMP '
        'UPSTREAM_PORT2_TX_AMP UPSTREAM_PORT3_TX_AMP VL_BUFFER_ALLOCATION VL_ISOLATION_MODE'),
    4: (
        'DUP_MAC_ACTION ICM_CACHE_MODE INTERNAL_CPU_MODEL INT_LOG_MAX_PAYLOAD_SIZE LRO_LOG_TIMEOUT0 '
        'LRO_LOG_TIMEOUT1 LRO_LOG_TIMEOUT2 LRO_LOG_TIMEOUT3 MEMIC_SIZE_LIMIT MODULE_MAC_MODE '
        'NETWORK_PORTS_NUMBER NUM_OF_PFC NUM_OF_TC NUM_OF_VL NVME_EMULATION_MAX_QUEUE_DEPTH '
        'NVME_EMU_MNG_MAX_QUEUE_DEPTH PCI_SWITCH0_UPSTREAM_PORT_BUS PCI_SWITCH1_UPSTREAM_PORT_BUS '
        'PCI_SWITCH2_UPSTREAM_PORT_BUS ROCE_CC_COMPATIBILITY_MODE RPG_GD STEERING_CACHE_REFRESH '
        'TX_SCHEDULER_LOCALITY_FACTOR UEFI_LOGS UPSTREAM_PORT0_GEN3_PRESET0 UPSTREAM_PORT0_GEN3_PRESET1 '
        'UPSTREAM_PORT0_GEN4_PRESET0 UPSTREAM_PORT0_GEN4_PRESET1 UPSTREAM_PORT0_GEN5_PRESET0 '
        'UPSTREAM_PORT0_GEN5_PRESET1 UPSTREAM_PORT0_GEN6_PRESET0 UPSTREAM_PORT0_GEN6_PRESET1 '
        'UPSTREAM_PORT1_GEN3_PRESET0 UPSTREAM_PORT1_GEN3_PRESET1 UPSTREAM_PORT1_GEN4_PRESET0 '
        'UPSTREAM_PORT1_GEN4_PRESET1 UPSTREAM_PORT1_GEN5_PRESET0 UPSTREAM_PORT1_GEN5_PRESET1 '
        'UPSTREAM_PORT1_GEN6_PRESET0 UPSTREAM_PORT1_GEN6_PRESET1 UPSTREAM_PORT2_GEN3_PRESET0 '
        'UPSTREAM_PORT2_GEN3_PRESET1 UPSTREAM_PORT2_GEN4_PRESET0 UPSTREAM_PORT2_GEN4_PRESET1 '
        'UPSTREAM_PORT2_GEN5_PRESET0 UPSTREAM_PORT2_GEN5_PRESET1 UPSTREAM_PORT2_GEN6_PRESET0 '
        'UPSTREAM_PORT2_GEN6_PRESET1 UPSTREAM_PORT3_GEN3_PRESET0 UPSTREAM_PORT3_GEN3_PRESET1 '
        'UPSTREAM_PORT3_GEN4_PRESET0 UPSTREAM_PORT3_GEN4_PRESET1 UPSTREAM_PORT3_GEN5_PRESET0 '
        'UPSTREAM_PORT3_GEN5_PRESET1 UPSTREAM_PORT3_GEN6_PRESET0 UPSTREAM_PORT3_GEN6_PRESET1 VL15_BUFFER_SIZE'),
    5: (
        'HAIRPIN_LOG_WQE_NUM LOG_DCR_HASH_TABLE_SIZE LOG_MAX_OUTSTANDING_READ_ATOMIC LOG_MAX_OUTSTANDING_WQE '
        'NVMF_PACER_THRESHOLD_READ NVMF_PACER_THRESHOLD_WRITE PCI_BUS00_SERIALIZER_INDEX '
        'PCI_BUS01_SERIALIZER_INDEX PCI_BUS02_SERIALIZER_INDEX PCI_BUS03_SERIALIZER_INDEX '
        'PCI_BUS04_SERIALIZER_INDEX PCI_BUS05_SERIALIZER_INDEX PCI_BUS06_SERIALIZER_INDEX '
        'PCI_BUS07_SERIALIZER_INDEX PCI_BUS10_SERIALIZER_INDEX PCI_BUS11_SERIALIZER_INDEX '
        'PCI_BUS12_SERIALIZER_INDEX PCI_BUS13_SERIALIZER_INDEX PCI_BUS14_SERIALIZER_INDEX '
        'PCI_BUS15_SERIALIZER_INDEX PCI_BUS16_SERIALIZER_INDEX PCI_BUS17_SERIALIZER_INDEX '
        'PCI_BUS20_SERIALIZER_INDEX PCI_BUS21_SERIALIZER_INDEX PCI_BUS22_SERIALIZER_INDEX '
        'PCI_BUS23_SERIALIZER_INDEX PCI_BUS24_SERIALIZER_INDEX PCI_BUS25_SERIALIZER_INDEX '
        'PCI_BUS26_SERIALIZER_INDEX PCI_BUS27_SERIALIZER_INDEX PF_NUM_SAT_PF RPG_THRESHOLD TX_SCHEDULER_BURST '
        'UPSTREAM_PORT0_PCIE_BUS UPSTREAM_PORT1_PCIE_BUS UPSTREAM_PORT2_PCIE_BUS UPSTREAM_PORT3_PCIE_BUS'),
    6: (
        'CNP_DSCP LOG_MAX_QUEUE LOG_TX_PSN_WINDOW MAX_PACKET_LIFETIME PCC_INT_NP_RTT_DSCP PF_LOG_BAR_SIZE '
        'ROCE_RTT_RESP_DSCP VF_LOG_BAR_SIZE'),
    7: (
        'PCC_INT_NP_RTT_DATA_MODE'),
    8: (
        'BOOT_UNDI_NETWORK_WAIT CRYPTO_POLICY ESWITCH_HAIRPIN_DESCRIPTORS ESWITCH_HAIRPIN_TOT_BUFFER_SIZE '
        'FLEX_PARSER_PROFILE_ENABLE HOST_CHAINING_DESCRIPTORS HOST_CHAINING_TOTAL_BUFFER_SIZE '
        'LEGACY_BOOT_PROTOCOL MEMIC_BAR_SIZE MODULE_MAX_POWER_OVERRIDE MODULE_SPLIT NUM_OF_PF NUM_OF_PLANES '
        'NVME_EMULATION_NUM_PF NVME_EMULATION_REVISION_ID NVME_EMU_MNG_NUM_PF NVME_EMU_MNG_REVISION_ID '
        'PCI_BUS00_PERST_GPIO PCI_BUS01_PERST_GPIO PCI_BUS02_PERST_GPIO PCI_BUS03_PERST_GPIO '
        'PCI_BUS04_PERST_GPIO PCI_BUS05_PERST_GPIO PCI_BUS06_PERST_GPIO PCI_BUS07_PERST_GPIO '
        'PCI_BUS10_PERST_GPIO PCI_BUS11_PERST_GPIO PCI_BUS12_PERST_GPIO PCI_BUS13_PERST_GPIO '
        'PCI_BUS14_PERST_GPIO PCI_BUS15_PERST_GPIO PCI_BUS16_PERST_GPIO PCI_BUS17_PERST_GPIO '
        'PCI_BUS20_PERST_GPIO PCI_BUS21_PERST_GPIO PCI_BUS22_PERST_GPIO PCI_BUS23_PERST_GPIO '
        'PCI_BUS24_PERST_GPIO PCI_BUS25_PERST_GPIO PCI_BUS26_PERST_GPIO PCI_BUS27_PERST_GPIO '
        'PCI_DOWNSTREAM_PORT_OWNER PCI_SWITCH_EMULATION_NUM_PORT PCI_SWITCH_EMULATION_NUM_TLP_PORT '
        'PCI_SWITCH_EMU_MNG_NUM_PORT PCI_SWITCH_EMU_MNG_NUM_TLP_PORT PF_BAR2_SIZE PF_SF_BAR_SIZE '
        'ROCE_CC_PRIO_MASK ROCE_NEXT_PROTOCOL RPG_MIN_DEC_FAC SAFE_MODE_THRESHOLD SWITCH_COMPT_FEATURE_MASK '
        'TX_PCI_DATA_FETCH_LATENCY VIRTIO_BLK_EMULATION_NUM_PF VIRTIO_BLK_EMU_MNG_NUM_PF '
        'VIRTIO_FS_EMULATION_NUM_PF VIRTIO_FS_EMU_MNG_NUM_PF VIRTIO_NET_EMULATION_NUM_PF '
        'VIRTIO_NET_EMU_MNG_NUM_PF'),
    10: (
        'CPLD_SERIALIZER_CHAIN_PCIE_OFFSET DCE_TCP_G INITIAL_ALPHA_VALUE NUM_PF_MSIX NUM_VF_MSIX'),
    12: (
        'BOOT_VLAN NVME_EMULATION_NUM_VF_MSIX NVME_EMU_MNG_NUM_VF_MSIX PF_NUM_PF_MSIX PF_NUM_VF_MSIX '
        'VIRTIO_BLK_EMULATION_NUM_VF_MSIX VIRTIO_BLK_EMU_MNG_NUM_VF_MSIX VIRTIO_FS_EMULATION_NUM_VF_MSIX '
        'VIRTIO_FS_EMU_MNG_NUM_VF_MSIX VIRTIO_NET_EMULATION_NUM_VF_MSIX VIRTIO_NET_EMU_MNG_NUM_VF_MSIX'),
    16: (
        'BOARD_CONFIGURATION_MODE BOOT_PKEY FLEX_IPV4_OVER_VXLAN_PORT ICMD_SEM_LOCK_THRESHOLD '
        'IDLE_ICMD_SEM_LOCK_THRESHOLD IP_OVER_VXLAN_PORT MAX_ACC_OUT_READ NUM_OF_VFS NVME_EMULATION_DEVICE_ID '
        'NVME_EMULATION_NUM_MSIX NVME_EMULATION_NUM_VF NVME_EMULATION_SUBSYSTEM_ID '
        'NVME_EMULATION_SUBSYSTEM_VENDOR_ID NVME_EMULATION_VENDOR_ID NVME_EMU_MNG_DEVICE_ID '
        'NVME_EMU_MNG_NUM_MSIX NVME_EMU_MNG_NUM_VF NVME_EMU_MNG_SUBS_ID NVME_EMU_MNG_SUBS_VENDOR_ID '
        'NVME_EMU_MNG_VENDOR_ID PCIE_CREDIT_TOKEN_TIMEOUT PCI_BUS00_CPLD_GPIO_MASK PCI_BUS01_CPLD_GPIO_MASK '
        'PCI_BUS02_CPLD_GPIO_MASK PCI_BUS03_CPLD_GPIO_MASK PCI_BUS04_CPLD_GPIO_MASK PCI_BUS05_CPLD_GPIO_MASK '
        'PCI_BUS06_CPLD_GPIO_MASK PCI_BUS07_CPLD_GPIO_MASK PCI_BUS10_CPLD_GPIO_MASK PCI_BUS11_CPLD_GPIO_MASK '
        'PCI_BUS12_CPLD_GPIO_MASK PCI_BUS13_CPLD_GPIO_MASK PCI_BUS14_CPLD_GPIO_MASK PCI_BUS15_CPLD_GPIO_MASK '
        'PCI_BUS16_CPLD_GPIO_MASK PCI_BUS17_CPLD_GPIO_MASK PCI_BUS20_CPLD_GPIO_MASK PCI_BUS21_CPLD_GPIO_MASK '
        'PCI_BUS22_CPLD_GPIO_MASK PCI_BUS23_CPLD_GPIO_MASK PCI_BUS24_CPLD_GPIO_MASK PCI_BUS25_CPLD_GPIO_MASK '
        'PCI_BUS26_CPLD_GPIO_MASK PCI_BUS27_CPLD_GPIO_MASK PF_DEVICE_ID PF_NUM_OF_VF PF_TOTAL_SF '
        'TLP_EMULATION_NUM_PF VIRTIO_BLK_EMULATION_NUM_MSIX VIRTIO_BLK_EMULATION_NUM_VF '
        'VIRTIO_BLK_EMULATION_SUBSYSTEM_ID VIRTIO_BLK_EMU_MNG_NUM_MSIX VIRTIO_BLK_EMU_MNG_NUM_VF '
        'VIRTIO_BLK_EMU_MNG_SUBS_ID VIRTIO_BLK_EMU_MNG_SUBS_VENDOR_ID VIRTIO_BLK_EMU_SUBS_VENDOR_ID '
        'VIRTIO_FS_EMULATION_NUM_MSIX VIRTIO_FS_EMULATION_NUM_VF VIRTIO_FS_EMULATION_SUBSYSTEM_ID '
        'VIRTIO_FS_EMU_MNG_NUM_MSIX VIRTIO_FS_EMU_MNG_NUM_VF VIRTIO_FS_EMU_MNG_SUBS_ID '
        'VIRTIO_FS_EMU_MNG_SUBS_VENDOR_ID VIRTIO_FS_EMU_SUBSYSTEM_VENDOR_ID VIRTIO_NET_EMULATION_NUM_MSIX '
        'VIRTIO_NET_EMULATION_NUM_VF VIRTIO_NET_EMULATION_SUBSYSTEM_ID VIRTIO_NET_EMU_MNG_NUM_MSIX '
        'VIRTIO_NET_EMU_MNG_NUM_VF VIRTIO_NET_EMU_MNG_SUBS_ID VIRTIO_NET_EMU_MNG_SUBS_VENDOR_ID '
        'VIRTIO_NET_EMU_SUBSYSTEM_VENDOR_ID VSEC_EXPULSION_DURATION'),
    17: (
        'DCE_TCP_RTT MIN_TIME_BETWEEN_CNPS RATE_REDUCE_MONITOR_PERIOD RPG_TIME_RESET'),
    24: (
        'DCR_LIFO_SIZE NVME_EMULATION_CLASS_CODE NVME_EMU_MNG_CLASS_CODE'),
}
FIELD_BITS = dict((name, width) for width, names in _FIELD_BITS_BY_WIDTH.items() for name in names.split())


class MlxconfigError(ValueError):
    """Input that cannot be used; ``line`` quotes the offending output line when there is one."""

    def __init__(self, message, line=None):
        super().__init__(message)
        self.line = line


def _header_columns(header, raw):
    labels = _HEADER_LABEL_RE.findall(header)
    if not labels:
        raise MlxconfigError('query header without Default/Current/Next Boot columns', raw)
    if len(set(labels)) != len(labels):
        raise MlxconfigError('query header names a column twice', raw)
    # `set --with_default` labels the Next Boot column "Default" (mlxconfig's labelNextAsDefault).
    if 'Next Boot' not in labels:
        labels = ['Next Boot' if label == 'Default' else label for label in labels]
        if 'Next Boot' not in labels:
            raise MlxconfigError('query header without a Next Boot column', raw)
    return labels


def _split_glued(values, wanted):
    """Split values an old tool printed without a separating space until there are ``wanted`` of them."""
    result = list(values)
    position = 0
    while len(result) < wanted and position < len(result):
        head = _GLUED_HEAD_RE.match(result[position])
        if head and head.end() < len(result[position]):
            token = result[position]
            result[position:position + 1] = [token[:head.end()], token[head.end():]]
        position += 1
    return result


def _row_words(line, raw, value_column):
    """The words of a row; with ``value_column`` known, a name as wide as its column is cut off its value."""
    if (value_column is None or len(raw) <= value_column or raw[value_column - 1].isspace()
            or raw[value_column].isspace()):
        return line.split()
    return raw[:value_column].split() + raw[value_column:].split()


def _parse_row(line, raw, columns, value_column=None):
    words = _row_words(line, raw, value_column)
    markers = ''
    if _MARKER_RE.match(words[0]) and len(words) > 1:
        markers = words.pop(0)
    name, values = words[0], words[1:]
    if len(values) < len(columns):
        values = _split_glued(values, len(columns))
    if not _PARAM_NAME_RE.match(name) or len(values) != len(columns):
        raise MlxconfigError('unrecognised query line (expected a parameter name and %d value%s)'
                             % (len(columns), '' if len(columns) == 1 else 's'), raw)
    bad = [value for value in values if not _PRINTED_RE.match(value)]
    if bad:
        raise MlxconfigError('unrecognised value %r in the query line' % bad[0], raw)
    entry = {'default': None, 'current': None, 'next_boot': None,
             'read_only': 'RO' in markers, 'modified': '*' in markers}
    if 'New' in columns:
        entry['new'] = None
    for column, value in zip(columns, values):
        entry[_COLUMN_KEYS[column]] = value
    return name, entry


def _value_column(raw, name):
    """Where the first value of a well-formed row starts (after its name)."""
    start = raw.index(name) + len(name)
    return start + len(raw[start:]) - len(raw[start:].lstrip())


def _parse_rows(rows, columns):
    """Parse the rows of one table; a row whose name filled its column is cut where the other rows' values start."""
    parsed, failed, starts = [], [], {}
    for line, raw in rows:
        try:
            name, entry = _parse_row(line, raw, columns)
            starts[_value_column(raw, name)] = starts.get(_value_column(raw, name), 0) + 1
            parsed.append((raw, name, entry, None))
        except MlxconfigError as exc:
            parsed.append((raw, None, None, exc))
            failed.append(raw)
    value_column = max(starts, key=lambda column: (starts[column], -column)) if starts and failed else None
    result = {}
    for (raw, name, entry, error), (line, _raw) in zip(parsed, rows):
        if error is not None:
            if value_column is None:
                raise error
            name, entry = _parse_row(line, raw, columns, value_column)
        if name in result:
            raise MlxconfigError('parameter %s is printed twice' % name, raw)
        result[name] = entry
    return result


def parse_query_table(text):
    """Parse query or set output into the table and what the tool said around it.

    Returns ``{'params': {NAME: {default, current, next_boot, read_only, modified[, new]}}, 'columns': [...],
    'layout': 'plain' | 'verbose' | 'set', 'device_type', 'name', 'description', 'device': str or None,
    'notes': [...]}``. Columns a layout does not print are None. Raises MlxconfigError, quoting the line, for
    anything that is not the tool's table (an error line of the tool included).
    """
    if not isinstance(text, str):
        raise MlxconfigError('the tool output is not text')
    columns = None
    rows = []
    result = {'params': {}, 'columns': [], 'layout': None, 'device_type': None, 'name': None,
              'description': None, 'device': None, 'notes': []}
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith('-E-'):
            raise MlxconfigError('the tool reported an error: %s' % line, raw)
        if line.startswith('Configurations:'):
            if columns is not None:
                raise MlxconfigError('the output holds more than one configuration table (one per device); '
                                     'query one device', raw)
            columns = _header_columns(line[len('Configurations:'):], raw)
            continue
        if line.startswith('Device #'):
            if columns is not None:
                raise MlxconfigError('the output holds more than one device; query one device', raw)
            continue
        if columns is None:
            field, sep, value = line.partition(':')
            if sep and field in _DEVICE_FIELDS and result[_DEVICE_FIELDS[field]] is None:
                result[_DEVICE_FIELDS[field]] = value.strip() or None
            continue
        if _NOT_SUPPORTED_RE.match(line):
            result['notes'].append(line)
            continue
        if _TRAILER_RE.match(line) or line.startswith('Failed') or set(line) == {'-'}:
            continue
        rows.append((line, raw))
    if columns is None:
        raise MlxconfigError('no "Configurations:" table in the output',
                             (text.strip().splitlines() or [''])[0])
    result['params'] = _parse_rows(rows, columns)
    result['columns'] = columns
    if 'New' in columns:
        result['layout'] = 'set'
    elif 'Default' in columns or 'Current' in columns:
        result['layout'] = 'verbose'
    else:
        result['layout'] = 'plain'
    return result


def parse_query(text):
    """Parse query output into ``{NAME: {default, current, next_boot, read_only, modified}}``.

    Columns the layout does not show are None; the table printed by ``set`` adds ``new`` (the value being
    applied). See ``parse_query_table`` for the layout and the device header.
    """
    return parse_query_table(text)['params']


def split_value(printed):
    """``IB(1)`` -> ('IB', 1); ``8`` -> (None, 8); ``N/A`` / ``Array[0..7]`` -> (None, None)."""
    if not isinstance(printed, str):
        return None, None
    match = _VALUE_RE.match(printed)
    if match:
        return match.group('name'), int(match.group('number'))
    if _INT_RE.match(printed):
        return None, int(printed, 0)
    return None, None


def array_bounds(printed):
    """``Array[0..7]`` -> (0, 7); anything else -> None."""
    match = _ARRAY_RE.match(printed or '')
    return (int(match.group('first')), int(match.group('last'))) if match else None


def split_name(name):
    """``NAME[3]`` -> ('NAME', 3); ``NAME`` -> ('NAME', None); None when it is no parameter name."""
    match = _PARAM_NAME_RE.match(name) if isinstance(name, str) else None
    if not match:
        return None
    index = match.group('index')
    return match.group('base'), (int(index) if index is not None else None)


def field_bits(name):
    """Width in bits of the parameter's field (of one element for an array), or None when not known."""
    parts = split_name(name)
    if parts is None:
        return None
    base = parts[0]
    for candidate in (base, re.sub(r'_P\d+$', '', base), re.sub(r'_M\d+$', '', base)):
        if candidate in FIELD_BITS:
            return FIELD_BITS[candidate]
    return None


def _enum_table(name, device_type=None):
    base = (split_name(name) or (name, None))[0]
    tables = dict(KNOWN_ENUMS)
    if (device_type or '').startswith('ConnectX3'):
        tables.update(_CONNECTX3_ENUMS)
    for prefix, table in tables.items():
        if base == prefix or re.match(r'^%s_P\d+$' % prefix, base):
            return table
    return None


def _describe(table):
    return ', '.join('%s(%d)' % item for item in sorted(table.items(), key=lambda item: (item[1], item[0])))


def _printed_values(entry):
    return [entry.get(key) for key in ('next_boot', 'current', 'default', 'new')
            if isinstance(entry.get(key), str) and entry.get(key) != 'N/A']


def learned_values(entry):
    """Value names the query printed for a parameter in any column: {name: number}."""
    table = {}
    for printed in _printed_values(entry):
        value_name, number = split_value(printed)
        if value_name is not None and not _INT_RE.match(value_name):
            table.setdefault(value_name, number)
    return table


def _wanted_parts(name, wanted):
    """(value name or None, number or None) of a wanted value as the user wrote it."""
    if wanted is None:
        raise MlxconfigError('%s has no value; give a name (IB), a number (1) or the printed form (IB(1))' % name)
    if isinstance(wanted, bool):  # YAML true/false
        return ('True', 1) if wanted else ('False', 0)
    if isinstance(wanted, int):
        return None, wanted
    if isinstance(wanted, float):
        if not math.isfinite(wanted) or wanted != int(wanted):
            raise MlxconfigError('%s: %r is not a whole number; firmware parameters take whole numbers or names'
                                 % (name, wanted))
        return None, int(wanted)
    if not isinstance(wanted, str):
        raise MlxconfigError('%s: a %s is not a firmware value; give a name (IB), a number (1) or the printed form '
                             '(IB(1))' % (name, type(wanted).__name__))
    text = wanted.strip()
    value_name, number = split_value(text)
    if value_name is None and number is None:
        if not _WORD_RE.match(text):
            raise MlxconfigError('%s: %r is not a value mlxconfig accepts (a name such as IB, a number, or '
                                 'the printed form such as IB(1))' % (name, wanted))
        value_name = text
    return value_name, number


def _check_number(name, number, wanted):
    bits = field_bits(name)
    if number < 0:
        raise MlxconfigError('%s: %r is negative; firmware parameters take numbers from 0' % (name, wanted))
    if bits is not None and number > (1 << bits) - 1:
        raise MlxconfigError('%s: %r does not fit the %d-bit field (0..%d); the tool refuses it'
                             % (name, wanted, bits, (1 << bits) - 1))
    if number >= _U32_MAX:
        raise MlxconfigError('%s: %r is out of range; the largest value a firmware parameter takes is %d'
                             % (name, wanted, _U32_MAX - 1))


def normalize_wanted(name, wanted, entry, device_type=None):
    """Return ``(set_token, number, value_name)`` of a wanted value for parameter ``name``.

    The parameter's kind comes from what the query prints for it in any column: a boolean (``True(1)``), an
    enum (``IB(1)``; its value names learned from every column), a number, or an array. Raises MlxconfigError
    for a value the parameter does not accept.
    """
    printed = _printed_values(entry)
    arrays = [value for value in printed if array_bounds(value)]
    if arrays:
        raise MlxconfigError('%s is an array parameter (%s); set its elements as %s[<index>] instead'
                             % (name, arrays[0], name))
    wanted_name, wanted_number = _wanted_parts(name, wanted)
    kinds = [split_value(value)[0] for value in printed]

    if any(kind in ('True', 'False') for kind in kinds):
        if wanted_name is not None:
            lowered = wanted_name.lower()
            number = 1 if lowered in _TRUE_WORDS else 0 if lowered in _FALSE_WORDS else None
            if number is None or (wanted_number is not None and wanted_number != number):
                raise MlxconfigError('%s is a boolean (True/False or 1/0), not %r' % (name, wanted))
            wanted_number = number
        if wanted_number not in (0, 1):
            raise MlxconfigError('%s is a boolean (True/False or 1/0), not %r' % (name, wanted))
        token = 'True' if wanted_number else 'False'
        return token, wanted_number, token

    known_table = _enum_table(name, device_type)
    table = dict(learned_values(entry))
    if known_table:
        table.update(known_table)
    if wanted_name is not None:
        match = [(k, v) for k, v in table.items() if k.lower() == wanted_name.lower()]
        if not match:
            if table:
                raise MlxconfigError('%s does not accept %r; known values: %s%s'
                                     % (name, wanted, _describe(table), '' if known_table else ', or a number'))
            raise MlxconfigError('%s takes a number (the device prints %s), not %r'
                                 % (name, (printed or ['N/A'])[0], wanted))
        canonical, number = match[0]
        if wanted_number is not None and wanted_number != number:
            raise MlxconfigError('%s: %r mixes %s with the number %d; %s is %d'
                                 % (name, wanted, canonical, wanted_number, canonical, number))
        return canonical, number, canonical
    if known_table is not None and wanted_number not in known_table.values():
        raise MlxconfigError('%s does not accept %r; known values: %s' % (name, wanted, _describe(known_table)))
    _check_number(name, wanted_number, wanted)
    value_name = dict((v, k) for k, v in sorted(table.items(), reverse=True)).get(wanted_number)
    return value_name or str(wanted_number), wanted_number, value_name


def matches(printed, number, value_name):
    """True when the printed value equals the wanted one, by number or else by name."""
    printed_name, printed_number = split_value(printed)
    if number is not None and printed_number is not None:
        return number == printed_number
    if value_name is not None and printed_name is not None:
        return value_name.lower() == printed_name.lower()
    return False


def printed_form(token, number, value_name):
    """How the tool will print the value: ``IB(1)``, ``True(1)`` or a plain number."""
    if value_name is not None and number is not None:
        return '%s(%d)' % (value_name, number)
    return token


def check_name(name):
    """Raise MlxconfigError unless ``name`` has the grammar of a parameter name (NAME or NAME[index])."""
    if not isinstance(name, str) or split_name(name) is None:
        raise MlxconfigError('%r is not a parameter name (letters, digits and _, optionally [index], as the query '
                             'prints them)' % (name,))


def element_queries(config, wanted_names):
    """Array elements of ``wanted_names`` whose array the query lists only as ``Array[a..b]``.

    These rows have to be queried by name (``mlxconfig ... q NAME[i]``) to know their Next Boot value.
    """
    result = []
    for name in sorted(wanted_names):
        parts = split_name(name) if isinstance(name, str) else None
        if not parts or parts[1] is None or name in config:
            continue
        parent = config.get(parts[0])
        bounds = array_bounds((parent or {}).get('next_boot')) if parent else None
        if bounds and bounds[0] <= parts[1] <= bounds[1]:
            result.append(name)
    return result


def _unknown_name_error(name, config):
    parts = split_name(name)
    base, index = parts
    parent = config.get(base)
    if index is not None and parent is not None:
        bounds = array_bounds(parent.get('next_boot')) or array_bounds(parent.get('current'))
        if bounds is None:
            return '%s: %s is not an array parameter (it prints %s); set it without an index' % (
                name, base, parent.get('next_boot'))
        return '%s: index %d is out of range; %s has the elements %d..%d' % (name, index, base, bounds[0], bounds[1])
    if base in KNOWN_PARAMS or any(base.upper() == known.upper() for known in KNOWN_PARAMS if known not in config):
        if not any(printed.upper() == name.upper() for printed in config):
            return ('%s is not a parameter of this device (the query does not list it; e.g. LINK_TYPE on an '
                    'Ethernet-only card)' % name)
    by_upper = {}
    for printed in config:
        by_upper.setdefault(printed.upper(), printed)
    same_case = by_upper.get(name.upper())
    if same_case:
        return 'unknown parameter %s; did you mean %s? (parameter names are case-sensitive)' % (name, same_case)
    close = difflib.get_close_matches(name.upper(), list(by_upper), n=3, cutoff=0.6)
    return 'unknown parameter %s%s' % (name, ('; did you mean %s?' % ', '.join(by_upper[c] for c in close))
                                       if close else '')


def plan(config, wanted_params, device_type=None):
    """Compare wanted values with Next Boot.

    Returns ``(changes, set_args)``: ``changes`` maps NAME -> {before, after}
    (printed forms) for what differs, ``set_args`` the ``NAME=VALUE`` words for
    one ``set`` call. Raises MlxconfigError, before anything is set, for an
    unknown parameter, one the device does not have, a read-only one, or a
    value the parameter does not accept. ``device_type`` is what the query prints as "Device type" (ConnectX-3
    link types take VPI).
    """
    changes = {}
    set_args = []
    errors = []
    for name in sorted(wanted_params, key=str):
        try:
            check_name(name)
        except MlxconfigError as exc:
            errors.append(str(exc))
            continue
        entry = config.get(name)
        if entry is None:
            errors.append(_unknown_name_error(name, config))
            continue
        if entry['read_only']:
            errors.append('%s is read-only (RO) on this device' % name)
            continue
        try:
            token, number, value_name = normalize_wanted(name, wanted_params[name], entry, device_type)
        except MlxconfigError as exc:
            errors.append(str(exc))
            continue
        if not matches(entry['next_boot'], number, value_name):
            changes[name] = {'before': entry['next_boot'], 'after': printed_form(token, number, value_name)}
            set_args.append('%s=%s' % (name, token))
    if errors:
        raise MlxconfigError('; '.join(errors))
    return changes, set_args


def pending(config):
    """Names whose Current differs from Next Boot: set, but not active until a firmware reset or reboot."""
    result = []
    for name, entry in sorted(config.items()):
        if entry['current'] is None or entry['next_boot'] is None:
            continue
        current_number = split_value(entry['current'])[1]
        next_number = split_value(entry['next_boot'])[1]
        if current_number is not None and next_number is not None:
            differs = current_number != next_number
        else:
            differs = entry['current'] != entry['next_boot']
        if differs:
            result.append(name)
    return result


def apply_changes(config, changes):
    """The configuration as it will read after ``changes`` are set (check mode's prediction)."""
    result = dict((name, dict(entry)) for name, entry in config.items())
    for name, change in changes.items():
        result[name]['next_boot'] = change['after']
    return result


def render_next_boot(config, names):
    """Lines ``NAME=<next boot>`` for the diff."""
    return ''.join('%s=%s\n' % (name, config[name]['next_boot'] if name in config else '(absent)')
                   for name in sorted(names, key=str))
