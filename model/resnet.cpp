#include "model/resnet.hpp"
