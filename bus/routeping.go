package bus

// RoutePingInterval is how often a cluster's node pings each route; a
// route closes after 3 pings unanswered. Both ends of a route ping, so
// both see a cut route close, at most one interval apart.
const RoutePingInterval = routePingInterval
