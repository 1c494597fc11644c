package netpath

import (
	"net"

	"golang.org/x/sys/unix"
)

// routeMTU is the MTU of this machine's route to addr, as the kernel's route cache says (IP_MTU of a
// connected UDP socket; nothing is sent); 0 when it cannot tell.
func routeMTU(addr string) int {
	ip := net.ParseIP(addr)
	if ip == nil {
		return 0
	}
	c, err := net.DialUDP("udp", nil, &net.UDPAddr{IP: ip, Port: 9})
	if err != nil {
		return 0
	}
	defer func() { _ = c.Close() }()
	raw, err := c.SyscallConn()
	if err != nil {
		return 0
	}
	mtu := 0
	_ = raw.Control(func(fd uintptr) {
		level, opt := unix.IPPROTO_IP, unix.IP_MTU
		if ip.To4() == nil {
			level, opt = unix.IPPROTO_IPV6, unix.IPV6_MTU
		}
		if n, err := unix.GetsockoptInt(int(fd), level, opt); err == nil {
			mtu = n
		}
	})
	return mtu
}
